//! What can go wrong with the cache. The request path treats every error as
//! a miss; [`CacheError::Unavailable`] (outages, restarts) is kept apart from
//! bugs and bad deployments. No variant carries a URL's password.

use std::future::Future;
use std::time::Duration;

use sqlx::migrate::MigrateError;

#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    /// Not reached in time (down, restarting, every connection busy): transient.
    #[error("summary cache unavailable: {0}")]
    Unavailable(String),
    /// The cache URL or options are unusable.
    #[error("summary cache configuration: {0}")]
    Config(String),
    /// The schema could not be brought up to date.
    #[error("summary cache migration failed: {0}")]
    Migrate(String),
    /// The database answered, with an error.
    #[error("summary cache query failed: {0}")]
    Query(String),
}

impl CacheError {
    /// True for outages, which resolve without anyone doing anything.
    pub fn is_unavailable(&self) -> bool {
        matches!(self, CacheError::Unavailable(_))
    }
}

impl From<sqlx::Error> for CacheError {
    fn from(e: sqlx::Error) -> Self {
        use sqlx::Error as E;
        match e {
            E::PoolTimedOut => {
                CacheError::Unavailable("timed out waiting for a database connection".into())
            }
            E::PoolClosed => CacheError::Unavailable("connection pool closed".into()),
            E::WorkerCrashed => CacheError::Unavailable("database worker crashed".into()),
            // rustls reports a refused certificate as the handshake's I/O error.
            E::Io(e) if e.get_ref().is_some_and(|inner| inner.is::<rustls::Error>()) => {
                CacheError::Unavailable(format!("tls error: {e}"))
            }
            E::Io(e) => CacheError::Unavailable(format!("i/o error: {e}")),
            E::Tls(e) => CacheError::Unavailable(format!("tls error: {e}")),
            E::Protocol(e) => CacheError::Unavailable(format!("protocol error: {e}")),
            E::Configuration(e) => CacheError::Config(e.to_string()),
            E::Migrate(e) => (*e).into(),
            E::Database(db) if transient(db.as_ref()) => CacheError::Unavailable(db.to_string()),
            other => CacheError::Query(other.to_string()),
        }
    }
}

impl From<MigrateError> for CacheError {
    fn from(e: MigrateError) -> Self {
        match e {
            // Could not even reach the database: an outage, not a schema problem.
            MigrateError::Execute(inner) => match CacheError::from(inner) {
                CacheError::Unavailable(m) => CacheError::Unavailable(m),
                other => CacheError::Migrate(other.to_string()),
            },
            other => CacheError::Migrate(other.to_string()),
        }
    }
}

/// Database errors that mean "not now": PostgreSQL's SQLSTATE classes 08, 53
/// and 57P01-57P03; SQLite's SQLITE_BUSY (5) and SQLITE_LOCKED (6).
fn transient(db: &dyn sqlx::error::DatabaseError) -> bool {
    let Some(code) = db.code() else { return false };
    if db.try_downcast_ref::<sqlx::sqlite::SqliteError>().is_some() {
        return code.parse::<i32>().is_ok_and(sqlite_transient);
    }
    pg_transient(&code)
}

fn pg_transient(sqlstate: &str) -> bool {
    sqlstate.starts_with("08")
        || sqlstate.starts_with("53")
        || matches!(sqlstate, "57P01" | "57P02" | "57P03")
}

fn sqlite_transient(code: i32) -> bool {
    matches!(code & 0xff, 5 | 6)
}

/// Runs one cache operation with a hard deadline: it also bounds a statement
/// whose peer vanished mid-query (a cut network sends no TCP reset).
pub(crate) async fn bounded<T>(
    limit: Duration,
    op: impl Future<Output = Result<T, CacheError>>,
) -> Result<T, CacheError> {
    match tokio::time::timeout(limit, op).await {
        Ok(result) => result,
        Err(_) => Err(CacheError::Unavailable(format!(
            "no answer within {}",
            humantime::format_duration(limit)
        ))),
    }
}

/// `message` without the URL's password (raw and percent-decoded): a parser may echo it.
pub(crate) fn scrub(message: &str, url: &str) -> String {
    let mut secrets = Vec::new();
    if let Some(rest) = url.split_once("://").map(|(_, r)| r) {
        let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
        if let Some((userinfo, _)) = authority.rsplit_once('@')
            && let Some((_, pw)) = userinfo.split_once(':')
        {
            secrets.push(pw.to_string());
        }
    }
    if let Some((_, query)) = url.split_once('?') {
        for kv in query.split('&') {
            if let Some((k, v)) = kv.split_once('=')
                && crate::redact::secret_name(k)
            {
                secrets.push(v.to_string());
            }
        }
    }
    let mut out = message.to_string();
    for s in secrets.into_iter().filter(|s| !s.is_empty()) {
        let decoded = percent_encoding::percent_decode_str(&s).decode_utf8_lossy();
        out = out.replace(&s, "***").replace(&*decoded, "***");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scrub_removes_raw_and_decoded_passwords() {
        let url = "postgres://app:s3cr%40t@db/x?password=other";
        assert_eq!(
            scrub("a s3cr%40t b s3cr@t c other", url),
            "a *** b *** c ***"
        );
    }

    #[test]
    fn classifies_transient_codes() {
        assert!(pg_transient("57P03"));
        assert!(pg_transient("08006"));
        assert!(pg_transient("53300"));
        assert!(!pg_transient("23505"));
        assert!(!pg_transient("42P01"));
        assert!(sqlite_transient(5));
        assert!(sqlite_transient(517)); // SQLITE_BUSY_SNAPSHOT
        assert!(sqlite_transient(6));
        assert!(!sqlite_transient(1));
        assert!(!sqlite_transient(2067)); // SQLITE_CONSTRAINT_UNIQUE
    }
}
