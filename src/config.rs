//! Configuration from flags and `CONDENSE_*` environment variables.
//!
//! Every default runs on a laptop: no file, no database, no upstream.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, ValueEnum};

use crate::cache::CacheOptions;
use crate::upstream::{Kind, RetryPolicy, Secret, UpstreamConfig};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line, for log shippers.
    Json,
}

#[derive(Debug, Clone, Parser)]
#[command(
    name = "condense",
    version,
    about = "Keeps LLM agents inside their context window."
)]
pub struct Config {
    /// Address to listen on.
    #[arg(long, env = "CONDENSE_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,

    /// Largest request body accepted, in bytes; larger ones get 413.
    #[arg(long, env = "CONDENSE_BODY_LIMIT", default_value_t = 8 * 1024 * 1024)]
    pub body_limit: usize,

    /// Per-request time limit, in seconds; slower requests get 503. LLM
    /// summaries of long spans take a while on small servers.
    #[arg(long, env = "CONDENSE_REQUEST_TIMEOUT", default_value_t = 120)]
    pub request_timeout: u64,

    /// TOML file of named profiles (`[profiles.NAME]` tables).
    #[arg(long, env = "CONDENSE_PROFILES_FILE")]
    pub profiles_file: Option<PathBuf>,

    /// TOML file replacing the embedded model registry (same shape as data/models.toml).
    #[arg(long, env = "CONDENSE_MODELS_FILE")]
    pub models_file: Option<PathBuf>,

    /// Model assumed when a request names none.
    #[arg(long, env = "CONDENSE_DEFAULT_MODEL", default_value = "gpt-4o")]
    pub default_model: String,

    /// Log format.
    #[arg(long, env = "CONDENSE_LOG_FORMAT", value_enum, default_value = "text")]
    pub log_format: LogFormat,

    /// Base URL of the upstream LLM that writes `llm` summaries (unset: heuristic only).
    #[arg(long, env = "CONDENSE_UPSTREAM_URL")]
    pub upstream_url: Option<String>,

    /// API the upstream speaks.
    #[arg(
        long,
        env = "CONDENSE_UPSTREAM_KIND",
        value_enum,
        default_value = "openai"
    )]
    pub upstream_kind: Kind,

    /// API key for the upstream; never logged or echoed.
    #[arg(
        long,
        env = "CONDENSE_UPSTREAM_API_KEY",
        hide_env_values = true,
        default_value = ""
    )]
    pub upstream_api_key: Secret,

    /// Model that writes summaries.
    #[arg(long, env = "CONDENSE_UPSTREAM_MODEL", default_value = "gpt-4o-mini")]
    pub upstream_model: String,

    /// Other models a request may choose with `summarizer.model` (comma-separated).
    #[arg(long, env = "CONDENSE_UPSTREAM_ALLOWED_MODELS", value_delimiter = ',')]
    pub upstream_allowed_models: Vec<String>,

    /// Timeout of one upstream HTTP call, in seconds.
    #[arg(long, env = "CONDENSE_UPSTREAM_TIMEOUT", default_value_t = 60)]
    pub upstream_timeout: u64,

    /// Total seconds for an upstream call and its retries.
    #[arg(long, env = "CONDENSE_UPSTREAM_RETRY_BUDGET", default_value_t = 90)]
    pub upstream_retry_budget: u64,

    /// Most retries of one upstream call.
    #[arg(long, env = "CONDENSE_UPSTREAM_MAX_RETRIES", default_value_t = 4)]
    pub upstream_max_retries: u32,

    /// Most upstream calls in flight at once.
    #[arg(long, env = "CONDENSE_UPSTREAM_MAX_CONCURRENCY", default_value_t = 4)]
    pub upstream_max_concurrency: usize,

    /// Longest tool result the LLM sees in a transcript, in characters (cut in the middle).
    #[arg(long, env = "CONDENSE_UPSTREAM_RESULT_CHARS", default_value_t = crate::summarize::llm::RESULT_CHARS)]
    pub upstream_result_chars: usize,

    /// Summary cache: `postgres://…` (shared by replicas), `sqlite://…`, or
    /// `off`. Unset: `DATABASE_URL`, else an embedded SQLite file at `--cache-path`.
    #[arg(long, env = "CONDENSE_DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<String>,

    /// The embedded SQLite cache file used when no database URL is set.
    #[arg(
        long,
        env = "CONDENSE_CACHE_PATH",
        default_value = "condense-cache.sqlite3"
    )]
    pub cache_path: PathBuf,

    /// Days a cached summary is served.
    #[arg(long, env = "CONDENSE_CACHE_TTL_DAYS", default_value_t = 30)]
    pub cache_ttl_days: u64,

    /// Most cached summaries kept (least recently used go first).
    #[arg(long, env = "CONDENSE_CACHE_MAX_ROWS", default_value_t = 100_000)]
    pub cache_max_rows: u64,

    /// Database pool size.
    #[arg(long, env = "CONDENSE_DB_MAX_CONNECTIONS", default_value_t = 8)]
    pub db_max_connections: u32,

    /// Milliseconds to wait for a database connection before answering uncached.
    #[arg(long, env = "CONDENSE_DB_ACQUIRE_TIMEOUT_MS", default_value_t = 500)]
    pub db_acquire_timeout_ms: u64,

    /// The summarizer model's context window (prompt + output), for chunking.
    #[arg(
        long,
        env = "CONDENSE_UPSTREAM_CONTEXT_WINDOW",
        default_value_t = 128_000
    )]
    pub upstream_context_window: usize,
}

impl Default for Config {
    /// The defaults alone, ignoring the environment (for tests and embedding).
    fn default() -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            body_limit: 8 * 1024 * 1024,
            request_timeout: 120,
            profiles_file: None,
            models_file: None,
            default_model: "gpt-4o".into(),
            log_format: LogFormat::Text,
            upstream_url: None,
            upstream_kind: Kind::OpenAi,
            upstream_api_key: Secret::default(),
            upstream_model: "gpt-4o-mini".into(),
            upstream_allowed_models: Vec::new(),
            upstream_timeout: 60,
            upstream_retry_budget: 90,
            upstream_max_retries: 4,
            upstream_max_concurrency: 4,
            upstream_context_window: 128_000,
            upstream_result_chars: crate::summarize::llm::RESULT_CHARS,
            database_url: None,
            cache_path: PathBuf::from("condense-cache.sqlite3"),
            cache_ttl_days: 30,
            cache_max_rows: 100_000,
            db_max_connections: 8,
            db_acquire_timeout_ms: 500,
        }
    }
}

impl Config {
    /// The cache URL: `--database-url`, else `DATABASE_URL`, else the SQLite file.
    pub fn cache_url(&self) -> String {
        self.cache_url_or(std::env::var("DATABASE_URL").ok())
    }

    /// [`Config::cache_url`] with the `DATABASE_URL` fallback given explicitly.
    pub fn cache_url_or(&self, database_url_env: Option<String>) -> String {
        self.database_url
            .clone()
            .or(database_url_env)
            .filter(|u| !u.trim().is_empty())
            .unwrap_or_else(|| format!("sqlite://{}?mode=rwc", self.cache_path.display()))
    }

    pub fn cache_options(&self) -> CacheOptions {
        CacheOptions {
            max_connections: self.db_max_connections.max(1),
            acquire_timeout: Duration::from_millis(self.db_acquire_timeout_ms.max(1)),
            ttl: Duration::from_secs(self.cache_ttl_days.max(1) * 86_400),
            max_rows: self.cache_max_rows,
            claim_lease: CacheOptions::DEFAULT_CLAIM_LEASE,
        }
    }

    /// The upstream client's settings, when an upstream URL is configured.
    pub fn upstream(&self) -> Option<UpstreamConfig> {
        let url = self
            .upstream_url
            .as_ref()
            .filter(|u| !u.trim().is_empty())?;
        Some(UpstreamConfig {
            kind: self.upstream_kind,
            base_url: url.clone(),
            api_key: self.upstream_api_key.clone(),
            model: self.upstream_model.clone(),
            allowed_models: self.upstream_allowed_models.clone(),
            timeout: Duration::from_secs(self.upstream_timeout.max(1)),
            retry: RetryPolicy {
                max_retries: self.upstream_max_retries,
                budget: Duration::from_secs(self.upstream_retry_budget.max(1)),
                ..RetryPolicy::default()
            },
            max_concurrency: self.upstream_max_concurrency,
            context_window: self.upstream_context_window,
            result_chars: self.upstream_result_chars.max(40),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clap_defaults_match_default_impl() {
        let parsed = Config::try_parse_from(["condense"]).unwrap();
        let d = Config::default();
        // The environment of the test run may set CONDENSE_*; compare only when it does not.
        if std::env::vars().all(|(k, _)| !k.starts_with("CONDENSE_")) {
            assert_eq!(parsed.listen, d.listen);
            assert_eq!(parsed.body_limit, d.body_limit);
            assert_eq!(parsed.request_timeout, d.request_timeout);
            assert_eq!(parsed.default_model, d.default_model);
            assert_eq!(parsed.log_format, d.log_format);
        }
    }
}
