//! The SQLite backend: a cache file for one process (times in Unix
//! milliseconds). WAL lets readers proceed while a connection writes; the busy
//! timeout makes writers queue instead of failing.
//!
//! No part of the files is mapped into memory. SQLite's default unix VFS maps
//! WAL's index (the `-shm` file) to share it between processes, and a mapped
//! file that another process truncates raises SIGBUS at the next access: the
//! whole process dies, no error to log. The `unix-excl` VFS keeps that index
//! in this process's heap instead, and locks the database against other
//! processes for as long as a connection is open: one condense process per
//! file (replicas share PostgreSQL), refused at start-up otherwise. `mmap_size`
//! stays 0 so the database file itself is read with `read(2)`: a damaged file
//! is an error of a cache call, served uncached like any other.

use sqlx::migrate::Migrator;
use sqlx::sqlite::{
    Sqlite, SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous,
};
use sqlx::{ConnectOptions, Connection};

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

    fn age_secs(col: &str) -> String {
        format!("CAST(({} - {col}) AS REAL) / 1000.0", Self::NOW)
    }

    fn rfc3339(col: &str) -> String {
        format!("strftime('%Y-%m-%dT%H:%M:%fZ', {col} / 1000.0, 'unixepoch')")
    }

    fn migrator() -> &'static Migrator {
        &MIGRATOR
    }

    fn rows_affected(done: Self::QueryResult) -> u64 {
        done.rows_affected()
    }
}

/// The VFS that keeps WAL's index in the heap and the file to this process
/// (see the module doc). Windows maps no file another process can shorten.
#[cfg(unix)]
const VFS: Option<&str> = Some("unix-excl");
#[cfg(not(unix))]
const VFS: Option<&str> = None;

/// SQLite's primary result code for "the database file is locked".
const SQLITE_BUSY: i32 = 5;

/// A cache in a SQLite file.
pub type SqliteCache = Store<Sqlite>;

impl SqliteCache {
    /// Opens (creating it if missing) and migrates the database; a file
    /// another process holds is refused, with a line that says so.
    pub async fn open(
        connect: SqliteConnectOptions,
        opts: CacheOptions,
    ) -> Result<SqliteCache, CacheError> {
        let path = connect.get_filename().display().to_string();
        let mut connect = connect
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .pragma("mmap_size", "0")
            .busy_timeout(opts.acquire_timeout);
        if let Some(vfs) = VFS {
            connect = connect.vfs(vfs);
        }
        // Opened outside the pool, whose deadline would end the wait first
        // and say only that it timed out: a file another process holds is
        // SQLITE_BUSY once the busy timeout is over.
        let first = connect
            .connect()
            .await
            .map_err(|e| held_elsewhere(e, &path))?;
        // The lock lasts while a connection is open: the pool keeps one at
        // least, and a SQLite connection gains nothing from being renewed.
        let pool = SqlitePoolOptions::new()
            .max_connections(opts.max_connections.max(1))
            .min_connections(1)
            .max_lifetime(None)
            .acquire_timeout(opts.acquire_timeout)
            .connect_with(connect)
            .await?;
        first.close().await?;
        let cache = Store::with_pool(pool, opts);
        cache.migrate().await?;
        Ok(cache)
    }
}

/// A busy file at start-up is another process's: this one cannot share it.
fn held_elsewhere(e: sqlx::Error, path: &str) -> CacheError {
    let busy = e
        .as_database_error()
        .and_then(|db| db.code())
        .and_then(|code| code.parse::<i32>().ok())
        .is_some_and(|code| code & 0xff == SQLITE_BUSY);
    if busy {
        CacheError::Config(format!(
            "the SQLite file {path} is in use by another process: each condense process \
             needs a cache file of its own (replicas share one through PostgreSQL)"
        ))
    } else {
        e.into()
    }
}
