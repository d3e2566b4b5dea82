//! The summary cache, shared by every replica: each summary under its content
//! hash, so any replica serves it byte for byte, and indexed by the rolling
//! hash of its span, so a longer thread can reuse it. PostgreSQL or SQLite
//! through one set of statements ([`Store`]). Single flight uses a claim table,
//! not advisory locks: it works in both databases and holds no session open
//! while an LLM call runs. The proxy's ledger (what each turn was billed)
//! lives beside the summaries, pruned as they are ([`Turn`]).

mod claim;
mod error;
mod health;
mod ledger;
mod postgres;
mod prune;
mod sqlite;
mod store;

use std::time::Duration;

use crate::redact::redact_url;

pub use claim::{ClaimGuard, settle};
pub use error::CacheError;
pub use health::{CacheHealth, HealthCheck, Status as HealthStatus};
pub use ledger::{Bill, Previous, Recorded, Turn, without_condense};
pub use postgres::PgCache;
pub use prune::spawn_pruner;
pub use sqlite::SqliteCache;
pub use store::{Dialect, Store};

/// One cached summary, stored and returned verbatim: a hit on any replica
/// yields exactly the bytes of the first write.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct CachedSummary {
    /// Hex SHA-256 content hash (primary key).
    pub key: String,
    /// Hex rolling hash of the span it covers (indexed, for prefix reuse).
    pub prefix_hash: String,
    /// How many messages that span has.
    pub span_len: i64,
    pub content: String,
    pub messages_summarized: i64,
    pub token_count: i64,
    pub strategy: String,
    pub model: Option<String>,
    /// RFC 3339 text.
    pub created_at: String,
    /// Messages after the pinned prefix in the first forwarded request carrying it.
    pub in_use_from: Option<i64>,
    /// The fidelity receipt (`summarize::Fidelity`) as opaque JSON text.
    pub fidelity: Option<String>,
}

/// The outcome of [`Cache::claim`] (the request path uses [`Cache::claim_lease`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    /// Compute, then `put` (which ends the claim) or `release`.
    Claimed,
    /// Another caller holds an unexpired claim: `wait_for` its result.
    Busy,
}

#[derive(Debug, Clone)]
pub struct CacheOptions {
    /// Connections per process; PostgreSQL's own limit is shared by all replicas.
    pub max_connections: u32,
    /// Longest wait for a connection. Also bounds every call (twice this), so
    /// an unreachable database costs a request at most that much.
    pub acquire_timeout: Duration,
    /// Age (since stored) after which an entry is a miss and may be pruned.
    pub ttl: Duration,
    /// Row cap for the pruner; the least recently hit rows go first.
    pub max_rows: u64,
    /// How long a claim holds without renewal: how long others wait for a
    /// holder that crashed. A live holder renews it every third of this.
    pub claim_lease: Duration,
}

impl Default for CacheOptions {
    fn default() -> Self {
        Self {
            max_connections: Self::DEFAULT_MAX_CONNECTIONS,
            acquire_timeout: Self::DEFAULT_ACQUIRE_TIMEOUT,
            ttl: Self::DEFAULT_TTL,
            max_rows: Self::DEFAULT_MAX_ROWS,
            claim_lease: Self::DEFAULT_CLAIM_LEASE,
        }
    }
}

impl CacheOptions {
    pub const DEFAULT_MAX_CONNECTIONS: u32 = 8;
    pub const DEFAULT_TTL: Duration = Duration::from_secs(30 * 24 * 3600);
    pub const DEFAULT_MAX_ROWS: u64 = 100_000;
    /// A request waits this long for a connection before answering uncached.
    pub const DEFAULT_ACQUIRE_TIMEOUT: Duration = Duration::from_millis(500);
    /// Several renewals fit in one slow upstream call, and a crashed holder
    /// costs its waiters half a minute at most.
    pub const DEFAULT_CLAIM_LEASE: Duration = Duration::from_secs(30);

    /// One call's deadline: the connection wait, and as long for the statements.
    pub(crate) fn call_timeout(&self) -> Duration {
        self.acquire_timeout.saturating_mul(2)
    }
}

/// The cache the application holds. Cheap to clone (pools are shared).
#[derive(Clone)]
pub enum Cache {
    Postgres(PgCache),
    Sqlite(SqliteCache),
    /// No cache: every `get` misses, every `put` is dropped, every claim succeeds.
    Off,
}

impl std::fmt::Debug for Cache {
    /// Names the backend only: connection options hold the password.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Cache({})", self.backend())
    }
}

/// The operations every backend has, each with what it does when the cache is off.
macro_rules! delegate {
    ($($name:ident($($arg:ident: $ty:ty),*) -> $out:ty = $off:expr;)*) => {$(
        pub async fn $name(&self, $($arg: $ty),*) -> Result<$out, CacheError> {
            match self {
                Cache::Postgres(c) => c.$name($($arg),*).await,
                Cache::Sqlite(c) => c.$name($($arg),*).await,
                Cache::Off => $off,
            }
        }
    )*};
}

impl Cache {
    /// Opens `postgres://…`, `sqlite://path` or `off`: PostgreSQL lazily (the
    /// service starts while it is down), SQLite at once (a bad path fails at startup).
    pub async fn connect(url: &str, opts: CacheOptions) -> Result<Cache, CacheError> {
        let trimmed = url.trim();
        let scheme = trimmed.split(':').next().unwrap_or("").to_ascii_lowercase();
        let cache = match scheme.as_str() {
            "off" if trimmed.eq_ignore_ascii_case("off") => Cache::Off,
            "postgres" | "postgresql" => {
                let connect = trimmed.parse().map_err(|e: sqlx::Error| {
                    CacheError::Config(format!(
                        "bad cache URL {}: {}",
                        redact_url(trimmed),
                        error::scrub(&e.to_string(), trimmed)
                    ))
                })?;
                Cache::Postgres(PgCache::new(connect, opts))
            }
            "sqlite" => {
                let connect = trimmed.parse().map_err(|e: sqlx::Error| {
                    CacheError::Config(format!(
                        "bad cache URL {}: {}",
                        redact_url(trimmed),
                        error::scrub(&e.to_string(), trimmed)
                    ))
                })?;
                Cache::Sqlite(SqliteCache::open(connect, opts).await?)
            }
            _ => {
                return Err(CacheError::Config(format!(
                    "unsupported cache URL {}: expected postgres://, postgresql://, sqlite:// or off",
                    redact_url(trimmed)
                )));
            }
        };
        // The TLS mode in force, also when the URL names none (`prefer`).
        let tls = match &cache {
            Cache::Postgres(c) => c.tls_mode(),
            _ => "none",
        };
        tracing::info!(backend = cache.backend(), url = %redact_url(trimmed), tls, "summary cache configured");
        Ok(cache)
    }

    /// `"postgres"`, `"sqlite"` or `"off"`, for logs and health output.
    pub fn backend(&self) -> &'static str {
        match self {
            Cache::Postgres(_) => "postgres",
            Cache::Sqlite(_) => "sqlite",
            Cache::Off => "off",
        }
    }

    /// The options it was opened with (`None` when off).
    pub fn options(&self) -> Option<&CacheOptions> {
        match self {
            Cache::Postgres(c) => Some(c.options()),
            Cache::Sqlite(c) => Some(c.options()),
            Cache::Off => None,
        }
    }

    delegate! {
        get(key: &str) -> Option<CachedSummary> = Ok(None);
        put(entry: &CachedSummary) -> CachedSummary = Ok(entry.clone());
        find_prefix(hashes: &[String]) -> Option<CachedSummary> = Ok(None);
        claim(key: &str, lease: Duration) -> Claim = Ok(Claim::Claimed);
        renew(key: &str, lease: Duration) -> bool = Ok(true);
        release(key: &str) -> () = Ok(());
        mark_in_use(key: &str, in_use_from: i64) -> () = Ok(());
        claim_active(key: &str) -> bool = Ok(false);
        prune(ttl: Duration, max_rows: u64) -> u64 = Ok(0);
        append_turn(turn: &Turn) -> () = Ok(());
        turns(conversation: &str) -> Vec<Recorded> = Ok(Vec::new());
        idle_secs(conversation: &str) -> Option<f64> = Ok(None);
        ping() -> () = Ok(());
        migrate() -> () = Ok(());
    }

    /// Reaches the database once and migrates, for the start-up report; on its own
    /// connection, as the pool would report only a timeout, not why.
    pub async fn check(&self) -> Result<(), CacheError> {
        match self {
            Cache::Postgres(c) => c.check().await,
            Cache::Sqlite(c) => c.ping().await,
            Cache::Off => Ok(()),
        }
    }
}
