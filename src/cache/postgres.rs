//! The PostgreSQL backend: one cache for every replica.
//!
//! The pool is created lazily ([`PgPoolOptions::connect_lazy_with`]) so the
//! service starts, and answers from its own computations, while the database
//! is down; the schema is migrated by the first call that reaches the
//! database, and retried by the next one if that fails. A down database makes
//! calls fail with [`CacheError::Unavailable`] within the acquire timeout (the
//! pool keeps no broken connection: each is pinged before use), and calls
//! succeed again by themselves once it is back, because the pool opens new
//! connections on demand.
//!
//! Every statement is a single atomic SQL statement (or one short
//! transaction, for pruning), and every time comparison uses the server's
//! `now()`, so replicas with skewed clocks agree on TTLs and leases.

use std::sync::Arc;
use std::time::Duration;

use sqlx::migrate::Migrator;
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions, PgSslMode};
use sqlx::{ConnectOptions, Connection};
use tokio::sync::OnceCell;

use super::error::bounded;
use super::{CacheBackend, CacheError, CacheOptions, CachedSummary, Claim, rows};

/// `ignore_missing`: during a rolling deploy an older replica must keep
/// working against a schema a newer one has already extended.
static MIGRATOR: Migrator = Migrator {
    ignore_missing: true,
    ..sqlx::migrate!("migrations/postgres")
};

/// Key of the advisory lock that lets one replica at a time prune (two
/// replicas deleting the same rows in different orders could deadlock).
const PRUNE_LOCK: i64 = 0x636f_6e64_656e_7365; // "condense"

const COLUMNS: &str = "key, prefix_hash, span_len, content, messages_summarized, \
                       token_count, strategy, model, created_at, in_use_from, fidelity";

/// Longest interval handed to PostgreSQL (100 years), so a huge TTL or lease
/// cannot overflow `interval` arithmetic.
const MAX_SECS: f64 = 100.0 * 365.0 * 24.0 * 3600.0;

fn secs(d: Duration) -> f64 {
    d.as_secs_f64().min(MAX_SECS)
}

/// A cache in PostgreSQL. Clones share the pool and the claim holder id.
#[derive(Clone)]
pub struct PgCache {
    pool: PgPool,
    migrated: Arc<OnceCell<()>>,
    /// Identifies this cache's claims, so `release` never drops a claim that
    /// another replica took over after this one's lease expired.
    holder: Arc<str>,
    opts: CacheOptions,
}

impl std::fmt::Debug for PgCache {
    /// No connection options: they hold the password.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgCache")
            .field("holder", &self.holder)
            .field("opts", &self.opts)
            .finish_non_exhaustive()
    }
}

impl PgCache {
    /// A lazily connected cache; does no I/O. Must be called inside a tokio runtime.
    pub fn new(connect: PgConnectOptions, opts: CacheOptions) -> PgCache {
        // Named in pg_stat_activity, unless the URL already names it.
        let connect = match connect.get_application_name() {
            Some(_) => connect,
            None => connect.application_name("condense-cache"),
        };
        let pool = PgPoolOptions::new()
            .max_connections(opts.max_connections.max(1))
            .min_connections(0)
            .acquire_timeout(opts.acquire_timeout)
            .test_before_acquire(true)
            .connect_lazy_with(connect);
        PgCache {
            pool,
            migrated: Arc::new(OnceCell::new()),
            holder: uuid::Uuid::new_v4().to_string().into(),
            opts,
        }
    }

    pub fn options(&self) -> &CacheOptions {
        &self.opts
    }

    /// The `sslmode` in force: `prefer` (the default) encrypts when the
    /// server offers TLS; `require` insists; `verify-ca`/`verify-full` also
    /// check the certificate (against `sslrootcert`, else the public roots).
    pub fn tls_mode(&self) -> &'static str {
        match self.pool.connect_options().get_ssl_mode() {
            PgSslMode::Disable => "disable",
            PgSslMode::Allow => "allow",
            PgSslMode::Prefer => "prefer",
            PgSslMode::Require => "require",
            PgSslMode::VerifyCa => "verify-ca",
            PgSslMode::VerifyFull => "verify-full",
        }
    }

    /// See [`Cache::check`](super::Cache::check).
    pub async fn check(&self) -> Result<(), CacheError> {
        bounded(self.opts.call_timeout(), async {
            let conn = self.pool.connect_options().connect().await?;
            let _ = conn.close().await;
            self.ready().await
        })
        .await
    }

    /// Closes the pool's connections; later calls fail with `Unavailable`.
    pub async fn close(&self) {
        self.pool.close().await;
    }

    /// Runs `op` once the schema is in place, within the call deadline.
    async fn call<T>(
        &self,
        op: impl Future<Output = Result<T, sqlx::Error>>,
    ) -> Result<T, CacheError> {
        bounded(self.opts.call_timeout(), async {
            self.ready().await?;
            Ok(op.await?)
        })
        .await
    }

    async fn ready(&self) -> Result<(), CacheError> {
        self.migrated
            .get_or_try_init(|| async {
                MIGRATOR.run(&self.pool).await?;
                tracing::debug!("summary cache schema (postgres) is up to date");
                Ok::<_, CacheError>(())
            })
            .await
            .map(|_| ())
    }
}

impl CacheBackend for PgCache {
    async fn get(&self, key: &str) -> Result<Option<CachedSummary>, CacheError> {
        let sql = format!(
            "UPDATE summary_cache SET hit_count = hit_count + 1, last_hit_at = now() \
             WHERE key = $1 AND stored_at > now() - make_interval(secs => $2) \
             RETURNING {COLUMNS}"
        );
        let q = sqlx::query_as(&sql).bind(key).bind(secs(self.opts.ttl));
        self.call(q.fetch_optional(&self.pool)).await
    }

    async fn put(&self, e: &CachedSummary) -> Result<CachedSummary, CacheError> {
        // The claim is dropped in the same statement: once the row exists,
        // waiters find it, and nobody needs to compute the key any more.
        // An expired row under the same key is replaced, not kept.
        let insert = "WITH done AS (DELETE FROM summary_claims WHERE key = $1) \
             INSERT INTO summary_cache (key, prefix_hash, span_len, content, \
                 messages_summarized, token_count, strategy, model, created_at, \
                 in_use_from, fidelity, stored_at, hit_count, last_hit_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $11, $12, now(), 0, now()) \
             ON CONFLICT (key) DO UPDATE SET prefix_hash = EXCLUDED.prefix_hash, \
                 span_len = EXCLUDED.span_len, content = EXCLUDED.content, \
                 messages_summarized = EXCLUDED.messages_summarized, \
                 token_count = EXCLUDED.token_count, strategy = EXCLUDED.strategy, \
                 model = EXCLUDED.model, created_at = EXCLUDED.created_at, \
                 in_use_from = EXCLUDED.in_use_from, fidelity = EXCLUDED.fidelity, \
                 stored_at = now(), hit_count = 0, last_hit_at = now() \
             WHERE summary_cache.stored_at <= now() - make_interval(secs => $10)";
        // A separate statement, so (under READ COMMITTED) it sees a row that a
        // concurrent writer committed while the insert waited on it.
        let select = format!("SELECT {COLUMNS} FROM summary_cache WHERE key = $1");
        let stored: Option<CachedSummary> = self
            .call(async {
                let mut conn = self.pool.acquire().await?;
                sqlx::query(insert)
                    .bind(&e.key)
                    .bind(&e.prefix_hash)
                    .bind(e.span_len)
                    .bind(&e.content)
                    .bind(e.messages_summarized)
                    .bind(e.token_count)
                    .bind(&e.strategy)
                    .bind(&e.model)
                    .bind(&e.created_at)
                    .bind(secs(self.opts.ttl))
                    .bind(e.in_use_from)
                    .bind(&e.fidelity)
                    .execute(&mut *conn)
                    .await?;
                sqlx::query_as(&select)
                    .bind(&e.key)
                    .fetch_optional(&mut *conn)
                    .await
            })
            .await?;
        // Gone already only if a prune raced the put; what was written was this.
        Ok(stored.unwrap_or_else(|| e.clone()))
    }

    async fn find_prefix(&self, hashes: &[String]) -> Result<Option<CachedSummary>, CacheError> {
        if hashes.is_empty() {
            return Ok(None);
        }
        let sql = format!(
            "UPDATE summary_cache SET hit_count = hit_count + 1, last_hit_at = now() \
             WHERE key = (SELECT key FROM summary_cache \
                 WHERE prefix_hash = ANY($1) \
                   AND stored_at > now() - make_interval(secs => $2) \
                 ORDER BY span_len DESC, stored_at DESC, key LIMIT 1) \
             RETURNING {COLUMNS}"
        );
        let q = sqlx::query_as(&sql).bind(hashes).bind(secs(self.opts.ttl));
        self.call(q.fetch_optional(&self.pool)).await
    }

    async fn claim(&self, key: &str, lease: Duration) -> Result<Claim, CacheError> {
        // Inserts, or takes over an expired claim; the row lock taken by
        // ON CONFLICT makes concurrent claimers queue, so exactly one wins.
        let q = sqlx::query_scalar::<_, String>(
            "INSERT INTO summary_claims (key, holder, expires_at) \
             VALUES ($1, $2, now() + make_interval(secs => $3)) \
             ON CONFLICT (key) DO UPDATE \
                 SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at \
                 WHERE summary_claims.expires_at <= now() \
             RETURNING key",
        )
        .bind(key)
        .bind(&*self.holder)
        .bind(secs(lease));
        let won = self.call(q.fetch_optional(&self.pool)).await?;
        Ok(if won.is_some() {
            Claim::Claimed
        } else {
            Claim::Busy
        })
    }

    async fn renew(&self, key: &str, lease: Duration) -> Result<bool, CacheError> {
        let q = sqlx::query_scalar::<_, String>(
            "UPDATE summary_claims SET expires_at = now() + make_interval(secs => $3) \
             WHERE key = $1 AND holder = $2 RETURNING key",
        )
        .bind(key)
        .bind(&*self.holder)
        .bind(secs(lease));
        Ok(self.call(q.fetch_optional(&self.pool)).await?.is_some())
    }

    async fn mark_in_use(&self, key: &str, in_use_from: i64) -> Result<(), CacheError> {
        let q = sqlx::query(
            "UPDATE summary_cache SET in_use_from = $2 WHERE key = $1 AND in_use_from IS NULL",
        )
        .bind(key)
        .bind(in_use_from);
        self.call(q.execute(&self.pool)).await.map(|_| ())
    }

    async fn release(&self, key: &str) -> Result<(), CacheError> {
        let q = sqlx::query("DELETE FROM summary_claims WHERE key = $1 AND holder = $2")
            .bind(key)
            .bind(&*self.holder);
        self.call(q.execute(&self.pool)).await.map(|_| ())
    }

    async fn claim_active(&self, key: &str) -> Result<bool, CacheError> {
        let q = sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM summary_claims WHERE key = $1 AND expires_at > now())",
        )
        .bind(key);
        self.call(q.fetch_one(&self.pool)).await
    }

    async fn prune(&self, ttl: Duration, max_rows: u64) -> Result<u64, CacheError> {
        self.call(async {
            let mut tx = self.pool.begin().await?;
            let ours: bool = sqlx::query_scalar("SELECT pg_try_advisory_xact_lock($1)")
                .bind(PRUNE_LOCK)
                .fetch_one(&mut *tx)
                .await?;
            if !ours {
                return Ok(0); // another replica is pruning right now
            }
            let expired = sqlx::query(
                "DELETE FROM summary_cache WHERE stored_at <= now() - make_interval(secs => $1)",
            )
            .bind(secs(ttl))
            .execute(&mut *tx)
            .await?
            .rows_affected();
            let evicted = sqlx::query(
                "DELETE FROM summary_cache WHERE key IN (SELECT key FROM summary_cache \
                 ORDER BY last_hit_at DESC, key DESC OFFSET $1)",
            )
            .bind(rows(max_rows))
            .execute(&mut *tx)
            .await?
            .rows_affected();
            let claims = sqlx::query("DELETE FROM summary_claims WHERE expires_at <= now()")
                .execute(&mut *tx)
                .await?
                .rows_affected();
            tx.commit().await?;
            Ok(expired + evicted + claims)
        })
        .await
    }

    async fn ping(&self) -> Result<(), CacheError> {
        bounded(self.opts.call_timeout(), async {
            sqlx::query("SELECT 1").execute(&self.pool).await?;
            Ok(())
        })
        .await
    }

    async fn migrate(&self) -> Result<(), CacheError> {
        bounded(self.opts.call_timeout(), self.ready()).await
    }
}
