//! The cache's statements, written once for both databases. Times come from
//! the database's clock (`Dialect::NOW`), so replicas with skewed clocks agree
//! on TTLs and leases; each call is one statement or one short transaction.

use std::sync::Arc;
use std::time::Duration;

use sqlx::migrate::{Migrate, Migrator};
use sqlx::{Database, Encode, Executor, FromRow, IntoArguments, Pool, Type};
use tokio::sync::OnceCell;

use super::error::bounded;
use super::{CacheError, CacheOptions, CachedSummary, Claim};

/// What differs between the databases' SQL.
pub trait Dialect: Database {
    /// The current time, as the schema stores times.
    const NOW: &'static str;
    /// `prefix_hash` is one of the strings of the JSON array bound as `$1`.
    const PREFIX_IN: &'static str;
    /// `LIMIT` without a limit, for `OFFSET`.
    const NO_LIMIT: &'static str;
    /// Yields a row when this replica may prune now (two replicas deleting
    /// the same rows in different orders could deadlock).
    const PRUNE_LOCK: &'static str;
    /// The duration bound as parameter `p` (seconds), to add to [`Self::NOW`].
    fn secs(p: &str) -> String;
    /// Seconds (a float) from the time in column `col` to [`Self::NOW`].
    fn age_secs(col: &str) -> String;
    /// The time in column `col` as RFC 3339 text, UTC, to the millisecond.
    fn rfc3339(col: &str) -> String;
    fn migrator() -> &'static Migrator;
    fn rows_affected(done: Self::QueryResult) -> u64;
}

const COLUMNS: &str = "key, prefix_hash, span_len, content, messages_summarized, \
                       token_count, strategy, model, created_at, in_use_from, fidelity";

/// Seconds, at most 100 years: a huge TTL cannot overflow the database's arithmetic.
pub(super) fn secs(d: Duration) -> f64 {
    d.as_secs_f64().min(100.0 * 365.0 * 24.0 * 3600.0)
}

/// A cache in one database. Clones share the pool and the claim holder id.
pub struct Store<DB: Database> {
    pub(super) pool: Pool<DB>,
    migrated: Arc<OnceCell<()>>,
    /// So `release` never drops a claim another replica took over.
    holder: Arc<str>,
    pub(super) opts: CacheOptions,
}

impl<DB: Database> Clone for Store<DB> {
    fn clone(&self) -> Self {
        Self {
            pool: self.pool.clone(),
            migrated: self.migrated.clone(),
            holder: self.holder.clone(),
            opts: self.opts.clone(),
        }
    }
}

impl<DB: Dialect> Store<DB>
where
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'q> DB::Arguments<'q>: IntoArguments<'q, DB>,
    DB::Connection: Migrate,
    CachedSummary: for<'r> FromRow<'r, DB::Row>,
    for<'q> &'q str: Encode<'q, DB> + Type<DB>,
    for<'q> Option<&'q str>: Encode<'q, DB> + Type<DB>,
    for<'q> i64: Encode<'q, DB> + Type<DB>,
    for<'q> Option<i64>: Encode<'q, DB> + Type<DB>,
    for<'q> f64: Encode<'q, DB> + Type<DB>,
{
    pub(super) fn with_pool(pool: Pool<DB>, opts: CacheOptions) -> Self {
        Self {
            pool,
            migrated: Arc::default(),
            holder: uuid::Uuid::new_v4().to_string().into(),
            opts,
        }
    }

    pub fn options(&self) -> &CacheOptions {
        &self.opts
    }

    /// Closes the pool; later calls fail with `Unavailable`.
    pub async fn close(&self) {
        self.pool.close().await;
    }

    /// Runs `op` once the schema is in place, within the call deadline.
    pub(super) async fn call<T>(
        &self,
        op: impl Future<Output = Result<T, sqlx::Error>>,
    ) -> Result<T, CacheError> {
        bounded(self.opts.call_timeout(), async {
            self.ready().await?;
            Ok(op.await?)
        })
        .await
    }

    /// Migrates once; a failed migration is retried by the next call.
    pub(super) async fn ready(&self) -> Result<(), CacheError> {
        self.migrated
            .get_or_try_init(|| async {
                DB::migrator().run(&self.pool).await?;
                tracing::debug!(db = DB::NAME, "summary cache schema is up to date");
                Ok::<_, CacheError>(())
            })
            .await
            .map(|_| ())
    }

    /// The unexpired entry under `key`, bumping its `hit_count` and `last_hit_at`.
    pub async fn get(&self, key: &str) -> Result<Option<CachedSummary>, CacheError> {
        self.hit("$1", key).await
    }

    /// Counts a hit on the unexpired row keyed `which` (from `$1`; TTL `$2`).
    async fn hit(&self, which: &str, arg: &str) -> Result<Option<CachedSummary>, CacheError> {
        let (now, ttl) = (DB::NOW, DB::secs("$2"));
        let sql = format!(
            "UPDATE summary_cache SET hit_count = hit_count + 1, last_hit_at = {now} \
             WHERE key = {which} AND stored_at > {now} - {ttl} RETURNING {COLUMNS}"
        );
        let q = sqlx::query_as(&sql).bind(arg).bind(secs(self.opts.ttl));
        self.call(q.fetch_optional(&self.pool)).await
    }

    /// Stores `e` unless an unexpired row has its key (the first write wins),
    /// ends any claim on the key, and returns the stored row.
    pub async fn put(&self, e: &CachedSummary) -> Result<CachedSummary, CacheError> {
        let (now, ttl) = (DB::NOW, DB::secs("$10"));
        let insert = format!(
            "INSERT INTO summary_cache (key, prefix_hash, span_len, content, \
                 messages_summarized, token_count, strategy, model, created_at, \
                 in_use_from, fidelity, stored_at, hit_count, last_hit_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $11, $12, {now}, 0, {now}) \
             ON CONFLICT (key) DO UPDATE SET prefix_hash = EXCLUDED.prefix_hash, \
                 span_len = EXCLUDED.span_len, content = EXCLUDED.content, \
                 messages_summarized = EXCLUDED.messages_summarized, \
                 token_count = EXCLUDED.token_count, strategy = EXCLUDED.strategy, \
                 model = EXCLUDED.model, created_at = EXCLUDED.created_at, \
                 in_use_from = EXCLUDED.in_use_from, fidelity = EXCLUDED.fidelity, \
                 stored_at = {now}, hit_count = 0, last_hit_at = {now} \
             WHERE summary_cache.stored_at <= {now} - {ttl}"
        );
        let select = format!("SELECT {COLUMNS} FROM summary_cache WHERE key = $1");
        let stored: Option<CachedSummary> = self
            .call(async {
                let mut conn = self.pool.acquire().await?;
                sqlx::query(&insert)
                    .bind(e.key.as_str())
                    .bind(e.prefix_hash.as_str())
                    .bind(e.span_len)
                    .bind(e.content.as_str())
                    .bind(e.messages_summarized)
                    .bind(e.token_count)
                    .bind(e.strategy.as_str())
                    .bind(e.model.as_deref())
                    .bind(e.created_at.as_str())
                    .bind(secs(self.opts.ttl))
                    .bind(e.in_use_from)
                    .bind(e.fidelity.as_deref())
                    .execute(&mut *conn)
                    .await?;
                // After the row, so a waiter sees one or the other.
                sqlx::query("DELETE FROM summary_claims WHERE key = $1")
                    .bind(e.key.as_str())
                    .execute(&mut *conn)
                    .await?;
                // Apart, so READ COMMITTED sees a row a concurrent writer committed.
                sqlx::query_as(&select)
                    .bind(e.key.as_str())
                    .fetch_optional(&mut *conn)
                    .await
            })
            .await?;
        // Gone already only if a prune raced the put; what was written was this.
        Ok(stored.unwrap_or_else(|| e.clone()))
    }

    /// Among unexpired entries whose `prefix_hash` is one of `hashes` (bound as
    /// one JSON array), the one covering the most messages; counts as a hit.
    pub async fn find_prefix(
        &self,
        hashes: &[String],
    ) -> Result<Option<CachedSummary>, CacheError> {
        if hashes.is_empty() {
            return Ok(None);
        }
        let list = serde_json::to_string(hashes).map_err(|e| CacheError::Query(e.to_string()))?;
        let (now, ttl, hash_in) = (DB::NOW, DB::secs("$2"), DB::PREFIX_IN);
        let longest = format!(
            "(SELECT key FROM summary_cache WHERE {hash_in} AND stored_at > {now} - {ttl} \
             ORDER BY span_len DESC, stored_at DESC, key LIMIT 1)"
        );
        self.hit(&longest, &list).await
    }

    /// Records the first forwarded request to carry `key`'s summary.
    pub async fn mark_in_use(&self, key: &str, in_use_from: i64) -> Result<(), CacheError> {
        let q = sqlx::query(
            "UPDATE summary_cache SET in_use_from = $2 WHERE key = $1 AND in_use_from IS NULL",
        )
        .bind(key)
        .bind(in_use_from);
        self.call(q.execute(&self.pool)).await.map(|_| ())
    }

    /// Takes the claim on `key` for `lease` (new, or taking over an expired
    /// one); an atomic upsert, so exactly one concurrent claimer wins.
    pub async fn claim(&self, key: &str, lease: Duration) -> Result<Claim, CacheError> {
        let (now, lease_secs) = (DB::NOW, DB::secs("$3"));
        let sql = format!(
            "INSERT INTO summary_claims (key, holder, expires_at) \
             VALUES ($1, $2, {now} + {lease_secs}) \
             ON CONFLICT (key) DO UPDATE \
                 SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at \
                 WHERE summary_claims.expires_at <= {now} \
             RETURNING key"
        );
        let q = sqlx::query(&sql)
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

    /// Extends this cache's claim on `key` to `lease` from now; `false` if no longer its.
    pub async fn renew(&self, key: &str, lease: Duration) -> Result<bool, CacheError> {
        let (now, lease_secs) = (DB::NOW, DB::secs("$3"));
        let sql = format!(
            "UPDATE summary_claims SET expires_at = {now} + {lease_secs} \
             WHERE key = $1 AND holder = $2 RETURNING key"
        );
        let q = sqlx::query(&sql)
            .bind(key)
            .bind(&*self.holder)
            .bind(secs(lease));
        Ok(self.call(q.fetch_optional(&self.pool)).await?.is_some())
    }

    /// Gives up this cache's claim on `key` (a no-op if another holder took it over).
    pub async fn release(&self, key: &str) -> Result<(), CacheError> {
        let q = sqlx::query("DELETE FROM summary_claims WHERE key = $1 AND holder = $2")
            .bind(key)
            .bind(&*self.holder);
        self.call(q.execute(&self.pool)).await.map(|_| ())
    }

    /// Whether anyone holds an unexpired claim on `key`.
    pub async fn claim_active(&self, key: &str) -> Result<bool, CacheError> {
        let sql = format!(
            "SELECT key FROM summary_claims WHERE key = $1 AND expires_at > {}",
            DB::NOW
        );
        let q = sqlx::query(&sql).bind(key);
        Ok(self.call(q.fetch_optional(&self.pool)).await?.is_some())
    }

    /// Deletes expired rows and claims and the least recently hit beyond
    /// `max_rows`; the ledger's turns the same way (the oldest go first).
    pub async fn prune(&self, ttl: Duration, max_rows: u64) -> Result<u64, CacheError> {
        let (now, ttl_secs, all) = (DB::NOW, DB::secs("$1"), DB::NO_LIMIT);
        let expired = format!("DELETE FROM summary_cache WHERE stored_at <= {now} - {ttl_secs}");
        let evicted = format!(
            "DELETE FROM summary_cache WHERE key IN (SELECT key FROM summary_cache \
             ORDER BY last_hit_at DESC, key DESC LIMIT {all} OFFSET $1)"
        );
        let claims = format!("DELETE FROM summary_claims WHERE expires_at <= {now}");
        let turns_expired = format!("DELETE FROM ledger WHERE at <= {now} - {ttl_secs}");
        let turns_evicted = format!(
            "DELETE FROM ledger WHERE id IN (SELECT id FROM ledger \
             ORDER BY id DESC LIMIT {all} OFFSET $1)"
        );
        self.call(async {
            let mut tx = self.pool.begin().await?;
            let ours = sqlx::query(DB::PRUNE_LOCK).fetch_optional(&mut *tx).await?;
            if ours.is_none() {
                return Ok(0); // another replica is pruning right now
            }
            let expired = sqlx::query(&expired)
                .bind(secs(ttl))
                .execute(&mut *tx)
                .await?;
            let evicted = sqlx::query(&evicted)
                .bind(i64::try_from(max_rows).unwrap_or(i64::MAX))
                .execute(&mut *tx)
                .await?;
            let claims = sqlx::query(&claims).execute(&mut *tx).await?;
            let turns_expired = sqlx::query(&turns_expired)
                .bind(secs(ttl))
                .execute(&mut *tx)
                .await?;
            let turns_evicted = sqlx::query(&turns_evicted)
                .bind(i64::try_from(max_rows).unwrap_or(i64::MAX))
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            Ok([expired, evicted, claims, turns_expired, turns_evicted]
                .into_iter()
                .map(DB::rows_affected)
                .sum())
        })
        .await
    }

    /// `SELECT 1`, for readiness.
    pub async fn ping(&self) -> Result<(), CacheError> {
        bounded(self.opts.call_timeout(), async {
            sqlx::query("SELECT 1").execute(&self.pool).await?;
            Ok(())
        })
        .await
    }

    /// Brings the schema up to date (idempotent; other calls do it on first use).
    pub async fn migrate(&self) -> Result<(), CacheError> {
        bounded(self.opts.call_timeout(), self.ready()).await
    }
}
