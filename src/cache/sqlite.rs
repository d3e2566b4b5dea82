//! The SQLite backend: a cache file for one host (times in Unix milliseconds).
//! WAL lets readers proceed while one process writes; the busy timeout makes
//! writers queue instead of failing.

use sqlx::migrate::Migrator;
use sqlx::sqlite::{
    Sqlite, SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous,
};

use super::store::{Dialect, Store};
use super::{CacheError, CacheOptions};

static MIGRATOR: Migrator = Migrator {
    ignore_missing: true,
    ..sqlx::migrate!("migrations/sqlite")
};

impl Dialect for Sqlite {
    const NOW: &'static str = "CAST(unixepoch('subsec') * 1000 AS INTEGER)";
    const PREFIX_IN: &'static str = "prefix_hash IN (SELECT value FROM json_each($1))";
    const NO_LIMIT: &'static str = "-1";
    /// SQLite runs one writer at a time.
    const PRUNE_LOCK: &'static str = "SELECT 1";

    fn secs(p: &str) -> String {
        format!("CAST({p} * 1000 AS INTEGER)")
    }

    fn migrator() -> &'static Migrator {
        &MIGRATOR
    }

    fn rows_affected(done: Self::QueryResult) -> u64 {
        done.rows_affected()
    }
}

/// A cache in a SQLite file.
pub type SqliteCache = Store<Sqlite>;

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
        let cache = Store::with_pool(pool, opts);
        cache.migrate().await?;
        Ok(cache)
    }
}
