//! `[cache]`: the summary cache, its database and the background check
//! whose result `/readyz` reports.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::{MIN_PERIOD, duration};
use crate::cache::{CacheOptions, HealthCheck};

#[derive(Debug, Clone, PartialEq, Args)]
pub struct CacheSettings {
    /// Summary cache: `postgres://…` (shared by replicas), `sqlite://…`, or
    /// `off`. Unset: `DATABASE_URL`, else an embedded SQLite file at `--cache-path`.
    #[arg(
        id = "cache.database_url",
        long = "database-url",
        hide_env_values = true
    )]
    pub database_url: Option<String>,

    /// The embedded SQLite cache file used when no database URL is set.
    #[arg(
        id = "cache.path",
        long = "cache-path",
        default_value = "condense-cache.sqlite3"
    )]
    pub path: PathBuf,

    /// How long a cached summary is served.
    #[arg(
        id = "cache.ttl",
        long = "cache-ttl",
        value_parser = duration::parse,
        default_value = duration::format(CacheOptions::DEFAULT_TTL)
    )]
    pub ttl: Duration,

    /// Most cached summaries kept (least recently used go first).
    #[arg(
        id = "cache.max_rows",
        long = "cache-max-rows",
        default_value_t = CacheOptions::DEFAULT_MAX_ROWS
    )]
    pub max_rows: u64,

    /// How long a replica's claim on a summary holds without renewal: how
    /// long other replicas wait for one that crashed mid-summary. A live
    /// replica renews it every third of this for as long as the summary takes.
    #[arg(
        id = "cache.claim_lease",
        long = "cache-claim-lease",
        value_parser = duration::parse,
        default_value = duration::format(CacheOptions::DEFAULT_CLAIM_LEASE)
    )]
    pub claim_lease: Duration,

    /// Database pool size.
    #[arg(
        id = "cache.db_max_connections",
        long = "db-max-connections",
        default_value_t = CacheOptions::DEFAULT_MAX_CONNECTIONS
    )]
    pub db_max_connections: u32,

    /// Time to wait for a database connection before answering uncached.
    #[arg(
        id = "cache.db_acquire_timeout",
        long = "db-acquire-timeout",
        value_parser = duration::parse,
        default_value = duration::format(CacheOptions::DEFAULT_ACQUIRE_TIMEOUT)
    )]
    pub db_acquire_timeout: Duration,

    /// Time between background pings of the summary cache; `/readyz`
    /// reports what the last ping (or request) found, without a ping of its own.
    // Often enough for a readiness probe every 10 s to see a change within one period; one
    // `SELECT 1` per 5 s is nothing to the database.
    #[arg(
        id = "cache.check_interval",
        long = "cache-check-interval",
        value_parser = duration::parse,
        default_value = "5s"
    )]
    pub check_interval: Duration,

    /// Time a background ping may take before the cache counts as down.
    // As long as `/readyz` used to wait for its own ping.
    #[arg(
        id = "cache.check_timeout",
        long = "cache-check-timeout",
        value_parser = duration::parse,
        default_value = "2s"
    )]
    pub check_timeout: Duration,
}

impl CacheSettings {
    /// The cache URL: `--database-url`, else `DATABASE_URL`, else the SQLite file.
    pub fn url(&self) -> String {
        self.url_or(std::env::var("DATABASE_URL").ok())
    }

    /// [`CacheSettings::url`] with the `DATABASE_URL` fallback given explicitly.
    pub fn url_or(&self, database_url_env: Option<String>) -> String {
        self.database_url
            .clone()
            .or(database_url_env)
            .filter(|u| !u.trim().is_empty())
            .unwrap_or_else(|| format!("sqlite://{}?mode=rwc", self.path.display()))
    }

    pub fn options(&self) -> CacheOptions {
        CacheOptions {
            max_connections: self.db_max_connections.max(1),
            acquire_timeout: self.db_acquire_timeout.max(MIN_PERIOD),
            ttl: self.ttl.max(MIN_PERIOD),
            max_rows: self.max_rows,
            claim_lease: self.claim_lease,
        }
    }

    /// How the cache's background check runs.
    pub fn health_check(&self) -> HealthCheck {
        HealthCheck {
            every: self.check_interval.max(MIN_PERIOD),
            timeout: self.check_timeout.max(MIN_PERIOD),
        }
    }
}
