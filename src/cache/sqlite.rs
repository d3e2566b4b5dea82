//! The SQLite backend: a cache in a local file, for a single host.
//!
//! Same schema and semantics as PostgreSQL, with times as Unix milliseconds
//! from this host's clock (every process sharing the file shares the clock).
//! The file is opened and migrated when the cache is built: unlike a network
//! database, a path that cannot be opened will not fix itself, so it should
//! fail at startup. WAL mode lets readers proceed while one process writes,
//! and the busy timeout (the acquire timeout) makes writers queue instead of
//! failing at once. Several processes may share the file; claims then work
//! across them exactly as across PostgreSQL replicas.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sqlx::migrate::Migrator;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};

use super::error::bounded;
use super::{CacheBackend, CacheError, CacheOptions, CachedSummary, Claim, millis, rows};

static MIGRATOR: Migrator = Migrator {
    ignore_missing: true,
    ..sqlx::migrate!("migrations/sqlite")
};

const COLUMNS: &str = "key, prefix_hash, span_len, content, messages_summarized, \
                       token_count, strategy, model, created_at, in_use_from, fidelity";

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, millis)
}

/// A cache in a SQLite file. Clones share the pool and the claim holder id.
#[derive(Clone)]
pub struct SqliteCache {
    pool: SqlitePool,
    holder: Arc<str>,
    opts: CacheOptions,
}

impl std::fmt::Debug for SqliteCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteCache")
            .field("holder", &self.holder)
            .field("opts", &self.opts)
            .finish_non_exhaustive()
    }
}

impl SqliteCache {
    /// Opens (creating it if missing) and migrates the database.
    pub async fn open(
        connect: SqliteConnectOptions,
        opts: CacheOptions,
    ) -> Result<SqliteCache, CacheError> {
        let connect = connect
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(opts.acquire_timeout);
        let pool = SqlitePoolOptions::new()
            .max_connections(opts.max_connections.max(1))
            .acquire_timeout(opts.acquire_timeout)
            .connect_with(connect)
            .await?;
        let cache = SqliteCache {
            pool,
            holder: uuid::Uuid::new_v4().to_string().into(),
            opts,
        };
        cache.migrate().await?;
        Ok(cache)
    }

    pub fn options(&self) -> &CacheOptions {
        &self.opts
    }

    /// Closes the pool (and the file); later calls fail with `Unavailable`.
    pub async fn close(&self) {
        self.pool.close().await;
    }

    async fn call<T>(
        &self,
        op: impl Future<Output = Result<T, sqlx::Error>>,
    ) -> Result<T, CacheError> {
        bounded(self.opts.call_timeout(), async { Ok(op.await?) }).await
    }

    /// Rows stored at or before this instant are expired.
    fn expired_before(&self, ttl: Duration) -> i64 {
        now_ms().saturating_sub(millis(ttl))
    }
}

impl CacheBackend for SqliteCache {
    async fn get(&self, key: &str) -> Result<Option<CachedSummary>, CacheError> {
        let sql = format!(
            "UPDATE summary_cache SET hit_count = hit_count + 1, last_hit_at = ?2 \
             WHERE key = ?1 AND stored_at > ?3 RETURNING {COLUMNS}"
        );
        let q = sqlx::query_as(&sql)
            .bind(key)
            .bind(now_ms())
            .bind(self.expired_before(self.opts.ttl));
        self.call(q.fetch_optional(&self.pool)).await
    }

    async fn put(&self, e: &CachedSummary) -> Result<CachedSummary, CacheError> {
        let insert = "INSERT INTO summary_cache (key, prefix_hash, span_len, content, \
                 messages_summarized, token_count, strategy, model, created_at, \
                 in_use_from, fidelity, stored_at, hit_count, last_hit_at) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?12, ?13, ?10, 0, ?10) \
             ON CONFLICT (key) DO UPDATE SET prefix_hash = excluded.prefix_hash, \
                 span_len = excluded.span_len, content = excluded.content, \
                 messages_summarized = excluded.messages_summarized, \
                 token_count = excluded.token_count, strategy = excluded.strategy, \
                 model = excluded.model, created_at = excluded.created_at, \
                 in_use_from = excluded.in_use_from, fidelity = excluded.fidelity, \
                 stored_at = excluded.stored_at, hit_count = 0, \
                 last_hit_at = excluded.last_hit_at \
             WHERE summary_cache.stored_at <= ?11";
        let select = format!("SELECT {COLUMNS} FROM summary_cache WHERE key = ?1");
        let stored: Option<CachedSummary> = self
            .call(async {
                let mut tx = self.pool.begin().await?;
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
                    .bind(now_ms())
                    .bind(self.expired_before(self.opts.ttl))
                    .bind(e.in_use_from)
                    .bind(&e.fidelity)
                    .execute(&mut *tx)
                    .await?;
                sqlx::query("DELETE FROM summary_claims WHERE key = ?1")
                    .bind(&e.key)
                    .execute(&mut *tx)
                    .await?;
                let row = sqlx::query_as(&select)
                    .bind(&e.key)
                    .fetch_optional(&mut *tx)
                    .await?;
                tx.commit().await?;
                Ok(row)
            })
            .await?;
        Ok(stored.unwrap_or_else(|| e.clone()))
    }

    async fn find_prefix(&self, hashes: &[String]) -> Result<Option<CachedSummary>, CacheError> {
        if hashes.is_empty() {
            return Ok(None);
        }
        // The hashes travel as one JSON array, so the statement (and its
        // cached plan) does not depend on how many there are.
        let list = serde_json::to_string(hashes).map_err(|e| CacheError::Query(e.to_string()))?;
        let sql = format!(
            "UPDATE summary_cache SET hit_count = hit_count + 1, last_hit_at = ?2 \
             WHERE key = (SELECT key FROM summary_cache \
                 WHERE prefix_hash IN (SELECT value FROM json_each(?1)) AND stored_at > ?3 \
                 ORDER BY span_len DESC, stored_at DESC, key LIMIT 1) \
             RETURNING {COLUMNS}"
        );
        let q = sqlx::query_as(&sql)
            .bind(list)
            .bind(now_ms())
            .bind(self.expired_before(self.opts.ttl));
        self.call(q.fetch_optional(&self.pool)).await
    }

    async fn claim(&self, key: &str, lease: Duration) -> Result<Claim, CacheError> {
        // SQLite runs one writer at a time, so the upsert is atomic.
        let now = now_ms();
        let q = sqlx::query_scalar::<_, String>(
            "INSERT INTO summary_claims (key, holder, expires_at) VALUES (?1, ?2, ?3) \
             ON CONFLICT (key) DO UPDATE \
                 SET holder = excluded.holder, expires_at = excluded.expires_at \
                 WHERE summary_claims.expires_at <= ?4 \
             RETURNING key",
        )
        .bind(key)
        .bind(&*self.holder)
        .bind(now.saturating_add(millis(lease)))
        .bind(now);
        let won = self.call(q.fetch_optional(&self.pool)).await?;
        Ok(if won.is_some() {
            Claim::Claimed
        } else {
            Claim::Busy
        })
    }

    async fn renew(&self, key: &str, lease: Duration) -> Result<bool, CacheError> {
        let q = sqlx::query_scalar::<_, String>(
            "UPDATE summary_claims SET expires_at = ?3 WHERE key = ?1 AND holder = ?2 RETURNING key",
        )
        .bind(key)
        .bind(&*self.holder)
        .bind(now_ms().saturating_add(millis(lease)));
        Ok(self.call(q.fetch_optional(&self.pool)).await?.is_some())
    }

    async fn mark_in_use(&self, key: &str, in_use_from: i64) -> Result<(), CacheError> {
        let q = sqlx::query(
            "UPDATE summary_cache SET in_use_from = ?2 WHERE key = ?1 AND in_use_from IS NULL",
        )
        .bind(key)
        .bind(in_use_from);
        self.call(q.execute(&self.pool)).await.map(|_| ())
    }

    async fn release(&self, key: &str) -> Result<(), CacheError> {
        let q = sqlx::query("DELETE FROM summary_claims WHERE key = ?1 AND holder = ?2")
            .bind(key)
            .bind(&*self.holder);
        self.call(q.execute(&self.pool)).await.map(|_| ())
    }

    async fn claim_active(&self, key: &str) -> Result<bool, CacheError> {
        let q = sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM summary_claims WHERE key = ?1 AND expires_at > ?2)",
        )
        .bind(key)
        .bind(now_ms());
        self.call(q.fetch_one(&self.pool)).await
    }

    async fn prune(&self, ttl: Duration, max_rows: u64) -> Result<u64, CacheError> {
        self.call(async {
            let mut tx = self.pool.begin().await?;
            let expired = sqlx::query("DELETE FROM summary_cache WHERE stored_at <= ?1")
                .bind(self.expired_before(ttl))
                .execute(&mut *tx)
                .await?
                .rows_affected();
            let evicted = sqlx::query(
                "DELETE FROM summary_cache WHERE key IN (SELECT key FROM summary_cache \
                 ORDER BY last_hit_at DESC, key DESC LIMIT -1 OFFSET ?1)",
            )
            .bind(rows(max_rows))
            .execute(&mut *tx)
            .await?
            .rows_affected();
            let claims = sqlx::query("DELETE FROM summary_claims WHERE expires_at <= ?1")
                .bind(now_ms())
                .execute(&mut *tx)
                .await?
                .rows_affected();
            tx.commit().await?;
            Ok(expired + evicted + claims)
        })
        .await
    }

    async fn ping(&self) -> Result<(), CacheError> {
        self.call(async {
            sqlx::query("SELECT 1").execute(&self.pool).await?;
            Ok(())
        })
        .await
    }

    async fn migrate(&self) -> Result<(), CacheError> {
        bounded(self.opts.call_timeout(), async {
            MIGRATOR.run(&self.pool).await?;
            Ok(())
        })
        .await
    }
}
