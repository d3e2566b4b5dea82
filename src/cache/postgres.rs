//! The PostgreSQL backend: one cache for every replica. The pool is lazy, so
//! the service starts while the database is down; the first call that reaches
//! it migrates, and each connection is pinged before use.

use sqlx::migrate::Migrator;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions, PgSslMode, Postgres};
use sqlx::{ConnectOptions, Connection};

use super::error::bounded;
use super::store::{Dialect, Store};
use super::{CacheError, CacheOptions};

/// `ignore_missing`: during a rolling deploy an older replica must keep
/// working against a schema a newer one has already extended.
static MIGRATOR: Migrator = Migrator {
    ignore_missing: true,
    ..sqlx::migrate!("migrations/postgres")
};

impl Dialect for Postgres {
    const NOW: &'static str = "now()";
    const PREFIX_IN: &'static str =
        "prefix_hash = ANY(ARRAY(SELECT json_array_elements_text($1::json)))";
    const NO_LIMIT: &'static str = "ALL";
    /// One replica at a time, through an advisory lock ("condense" in hex).
    const PRUNE_LOCK: &'static str =
        "SELECT 1 WHERE pg_try_advisory_xact_lock(7165066909647270757)";

    fn secs(p: &str) -> String {
        format!("make_interval(secs => {p})")
    }

    fn age_secs(col: &str) -> String {
        format!("CAST(EXTRACT(EPOCH FROM (now() - {col})) AS DOUBLE PRECISION)")
    }

    fn rfc3339(col: &str) -> String {
        format!("to_char({col} AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')")
    }

    fn migrator() -> &'static Migrator {
        &MIGRATOR
    }

    fn rows_affected(done: Self::QueryResult) -> u64 {
        done.rows_affected()
    }
}

/// A cache in PostgreSQL.
pub type PgCache = Store<Postgres>;

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
        Store::with_pool(pool, opts)
    }

    /// The `sslmode` in force (`prefer` when the URL names none).
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
}
