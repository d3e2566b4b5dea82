//! Configuration from flags and `CONDENSE_*` environment variables.
//!
//! Every default runs on a laptop: no file, no database, no upstream. Each is
//! written once, in [`defaults`], and used both by clap and by
//! `Config::default()`, so the binary and the tests cannot drift apart.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, ValueEnum};

use crate::cache::{CacheOptions, HealthCheck};
use crate::guard::AccessConfig;
use crate::serve::ServeOptions;
use crate::thread::Limits;
use crate::upstream::{Kind, ProviderCountConfig, RetryPolicy, Secret, UpstreamConfig};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line, for log shippers.
    Json,
}

/// The default of every setting that has one. Those of the cache come from
/// [`CacheOptions`], which embedders use without a `Config`.
pub mod defaults {
    use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};

    use super::LogFormat;
    use crate::cache::CacheOptions;
    use crate::upstream::Kind;

    const DAY_SECS: u64 = 24 * 3600;

    pub const LISTEN: SocketAddr = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 8080));
    pub const BODY_LIMIT: usize = 8 * 1024 * 1024;
    pub const REQUEST_TIMEOUT_SECS: u64 = 120;
    pub const DEFAULT_MODEL: &str = "gpt-4o";
    pub const LOG_FORMAT: LogFormat = LogFormat::Text;
    pub const UPSTREAM_KIND: Kind = Kind::OpenAi;
    /// No key: a local upstream needs none.
    pub const UPSTREAM_API_KEY: &str = "";
    pub const UPSTREAM_MODEL: &str = "gpt-4o-mini";
    pub const UPSTREAM_TIMEOUT_SECS: u64 = 60;
    pub const UPSTREAM_RETRY_BUDGET_SECS: u64 = 90;
    pub const UPSTREAM_MAX_RETRIES: u32 = 4;
    pub const UPSTREAM_MAX_CONCURRENCY: usize = 4;
    pub const UPSTREAM_RESULT_CHARS: usize = crate::summarize::llm::RESULT_CHARS;
    pub const UPSTREAM_CONTEXT_WINDOW: usize = 128_000;
    pub const CACHE_PATH: &str = "condense-cache.sqlite3";
    pub const CACHE_TTL_DAYS: u64 = CacheOptions::DEFAULT_TTL.as_secs() / DAY_SECS;
    pub const CACHE_MAX_ROWS: u64 = CacheOptions::DEFAULT_MAX_ROWS;
    pub const CACHE_CLAIM_LEASE_SECS: u64 = CacheOptions::DEFAULT_CLAIM_LEASE.as_secs();
    pub const DB_MAX_CONNECTIONS: u32 = CacheOptions::DEFAULT_MAX_CONNECTIONS;
    /// Shorter than `CacheOptions`' own default: a request waits this long
    /// for a connection before answering uncached.
    pub const DB_ACQUIRE_TIMEOUT_MS: u64 = 500;
    /// A stream that sends nothing for this long is cut; a healthy one never is.
    pub const PROXY_IDLE_TIMEOUT_SECS: u64 = 300;
    /// A counting call is a short request: a provider slower than this is
    /// answered with the local estimate.
    pub const PROVIDER_COUNT_TIMEOUT_SECS: u64 = 10;
    /// How often the API keys file is re-read (it is also re-read on SIGHUP).
    pub const API_KEYS_RELOAD_SECS: u64 = 5;
    /// No rate limit.
    pub const RATE_LIMIT_PER_SEC: f64 = 0.0;
    pub const RATE_LIMIT_BURST: u32 = 20;
    /// Far above an agent's thread (the largest fixture has 300), far below
    /// what an 8 MiB body of tiny messages could hold.
    pub const MAX_MESSAGES: usize = 10_000;
    /// About a million tokens of text: the largest context window on offer.
    pub const MAX_TOTAL_CHARS: usize = 4_000_000;
    /// Requests at work at once before the next is refused (503). On two
    /// cores the CPU work runs two at a time anyway; the others wait for the
    /// upstream LLM (itself 4 at a time) or the database. Memory is
    /// bounded by [`MEMORY_BUDGET_BYTES`], not by this count.
    pub const MAX_CONCURRENCY: usize = 16;
    /// What the requests at work may hold at once, in bytes: the budget of
    /// `guard::memory`. Derived from the shipped Deployment's 1 GiB limit
    /// (see `guard::memory::limit_for` and the README's "Memory sizing"):
    /// 1 GiB = the idle process (96 MiB) + this + a quarter of this.
    pub const MEMORY_BUDGET_BYTES: u64 = 640 * 1024 * 1024;
    /// hyper's own default for reading a request head.
    pub const HEADER_READ_TIMEOUT_SECS: u64 = 30;
    /// Longer than the 60 s idle timeout of common load balancers, so that
    /// they, not condense, close a kept-alive connection first (nginx: 75 s).
    pub const IDLE_TIMEOUT_SECS: u64 = 75;
    /// Each may also hold a proxied provider connection: 1024 connections
    /// fit in about 2,100 open files (see `serve::connection_budget`).
    pub const MAX_CONNECTIONS: usize = 1024;

    // Probes and connection fairness (`cache::health`, `serve`).
    /// Often enough for a readiness probe every 10 s to see a change within
    /// one period; one `SELECT 1` per 5 s is nothing to the database.
    pub const CACHE_CHECK_SECS: u64 = 5;
    /// As long as `/readyz` used to wait for its own ping.
    pub const CACHE_CHECK_TIMEOUT_SECS: u64 = 2;
    /// A quarter of the default connection cap: one address cannot take the
    /// other three quarters, yet a host running many agents (all of them
    /// 127.0.0.1 to a local condense, each holding a few pooled
    /// connections: 20 agents are well under 100) never meets it.
    pub const MAX_CONNECTIONS_PER_ADDRESS: usize = 256;
    /// The probe listener serves an orchestrator's few probes and a metrics
    /// scraper, not clients.
    pub const PROBE_MAX_CONNECTIONS: usize = 16;
}

#[derive(Debug, Clone, PartialEq, Parser)]
#[command(
    name = "condense",
    version,
    about = "Keeps LLM agents inside their context window."
)]
pub struct Config {
    /// Address to listen on.
    #[arg(long, env = "CONDENSE_LISTEN", default_value_t = defaults::LISTEN)]
    pub listen: SocketAddr,

    /// Largest request body accepted, in bytes; larger ones get 413.
    #[arg(long, env = "CONDENSE_BODY_LIMIT", default_value_t = defaults::BODY_LIMIT)]
    pub body_limit: usize,

    /// Per-request time limit, in seconds; slower requests get 503. LLM
    /// summaries of long spans take a while on small servers.
    #[arg(long, env = "CONDENSE_REQUEST_TIMEOUT", default_value_t = defaults::REQUEST_TIMEOUT_SECS)]
    pub request_timeout: u64,

    /// File of named profiles: TOML (`[profiles.NAME]` tables), or YAML (`profiles:` → `NAME:`) when it ends in `.yaml`/`.yml`.
    #[arg(long, env = "CONDENSE_PROFILES_FILE")]
    pub profiles_file: Option<PathBuf>,

    /// TOML file replacing the embedded model registry (same shape as data/models.toml).
    #[arg(long, env = "CONDENSE_MODELS_FILE")]
    pub models_file: Option<PathBuf>,

    /// Model assumed when a request names none.
    #[arg(long, env = "CONDENSE_DEFAULT_MODEL", default_value = defaults::DEFAULT_MODEL)]
    pub default_model: String,

    /// Log format.
    #[arg(long, env = "CONDENSE_LOG_FORMAT", value_enum, default_value_t = defaults::LOG_FORMAT)]
    pub log_format: LogFormat,

    /// Base URL of the upstream LLM that writes `llm` summaries (unset:
    /// heuristic only). Credentials in it (`https://user:pass@host`) are sent
    /// as Basic auth and never shown.
    #[arg(long, env = "CONDENSE_UPSTREAM_URL", hide_env_values = true)]
    pub upstream_url: Option<String>,

    /// API the upstream speaks.
    #[arg(long, env = "CONDENSE_UPSTREAM_KIND", value_enum, default_value_t = defaults::UPSTREAM_KIND)]
    pub upstream_kind: Kind,

    /// API key for the upstream; never logged or echoed.
    #[arg(
        long,
        env = "CONDENSE_UPSTREAM_API_KEY",
        hide_env_values = true,
        default_value = defaults::UPSTREAM_API_KEY
    )]
    pub upstream_api_key: Secret,

    /// Model that writes summaries.
    #[arg(long, env = "CONDENSE_UPSTREAM_MODEL", default_value = defaults::UPSTREAM_MODEL)]
    pub upstream_model: String,

    /// Other models a request may choose with `summarizer.model` (comma-separated).
    #[arg(long, env = "CONDENSE_UPSTREAM_ALLOWED_MODELS", value_delimiter = ',')]
    pub upstream_allowed_models: Vec<String>,

    /// Timeout of one upstream HTTP call, in seconds.
    #[arg(long, env = "CONDENSE_UPSTREAM_TIMEOUT", default_value_t = defaults::UPSTREAM_TIMEOUT_SECS)]
    pub upstream_timeout: u64,

    /// Total seconds for an upstream call and its retries.
    #[arg(long, env = "CONDENSE_UPSTREAM_RETRY_BUDGET", default_value_t = defaults::UPSTREAM_RETRY_BUDGET_SECS)]
    pub upstream_retry_budget: u64,

    /// Most retries of one upstream call.
    #[arg(long, env = "CONDENSE_UPSTREAM_MAX_RETRIES", default_value_t = defaults::UPSTREAM_MAX_RETRIES)]
    pub upstream_max_retries: u32,

    /// Most upstream calls in flight at once.
    #[arg(long, env = "CONDENSE_UPSTREAM_MAX_CONCURRENCY", default_value_t = defaults::UPSTREAM_MAX_CONCURRENCY)]
    pub upstream_max_concurrency: usize,

    /// Most summaries written ahead (precompute) at once; beyond, a new one
    /// is skipped, not queued. 0: none is (profiles' `precompute_at` still
    /// defers nothing then: a due summary is written on its turn).
    #[arg(long, env = "CONDENSE_PRECOMPUTE_CONCURRENCY", default_value_t = crate::compress::PRECOMPUTE_CONCURRENCY)]
    pub precompute_concurrency: usize,

    /// Longest tool result the LLM sees in a transcript, in characters (cut in the middle).
    #[arg(long, env = "CONDENSE_UPSTREAM_RESULT_CHARS", default_value_t = defaults::UPSTREAM_RESULT_CHARS)]
    pub upstream_result_chars: usize,

    /// Summary cache: `postgres://…` (shared by replicas), `sqlite://…`, or
    /// `off`. Unset: `DATABASE_URL`, else an embedded SQLite file at `--cache-path`.
    #[arg(long, env = "CONDENSE_DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<String>,

    /// The embedded SQLite cache file used when no database URL is set.
    #[arg(long, env = "CONDENSE_CACHE_PATH", default_value = defaults::CACHE_PATH)]
    pub cache_path: PathBuf,

    /// Days a cached summary is served.
    #[arg(long, env = "CONDENSE_CACHE_TTL_DAYS", default_value_t = defaults::CACHE_TTL_DAYS)]
    pub cache_ttl_days: u64,

    /// Most cached summaries kept (least recently used go first).
    #[arg(long, env = "CONDENSE_CACHE_MAX_ROWS", default_value_t = defaults::CACHE_MAX_ROWS)]
    pub cache_max_rows: u64,

    /// Seconds a replica's claim on a summary holds without renewal: how long
    /// other replicas wait for one that crashed mid-summary. A live replica
    /// renews it every third of this for as long as the summary takes.
    #[arg(long, env = "CONDENSE_CACHE_CLAIM_LEASE_SECS", default_value_t = defaults::CACHE_CLAIM_LEASE_SECS)]
    pub cache_claim_lease_secs: u64,

    /// Database pool size.
    #[arg(long, env = "CONDENSE_DB_MAX_CONNECTIONS", default_value_t = defaults::DB_MAX_CONNECTIONS)]
    pub db_max_connections: u32,

    /// Milliseconds to wait for a database connection before answering uncached.
    #[arg(long, env = "CONDENSE_DB_ACQUIRE_TIMEOUT_MS", default_value_t = defaults::DB_ACQUIRE_TIMEOUT_MS)]
    pub db_acquire_timeout_ms: u64,

    /// The summarizer model's context window (prompt + output), for chunking.
    #[arg(long, env = "CONDENSE_UPSTREAM_CONTEXT_WINDOW", default_value_t = defaults::UPSTREAM_CONTEXT_WINDOW)]
    pub upstream_context_window: usize,

    /// Proxy `POST /v1/chat/completions`, `POST /v1/responses` and `POST /v1/responses/input_tokens`
    /// to this OpenAI-compatible base URL (e.g. `https://api.openai.com/v1`); unset: the routes are off.
    #[arg(long, env = "CONDENSE_PROXY_OPENAI_URL", hide_env_values = true)]
    pub proxy_openai_url: Option<String>,

    /// Proxy `POST /v1/messages` and `POST /v1/messages/count_tokens` to this Anthropic base URL
    /// (e.g. `https://api.anthropic.com`); unset: the routes are off.
    #[arg(long, env = "CONDENSE_PROXY_ANTHROPIC_URL", hide_env_values = true)]
    pub proxy_anthropic_url: Option<String>,

    /// Provider API key sent when a proxied request carries none; never logged.
    #[arg(long, env = "CONDENSE_PROXY_API_KEY", hide_env_values = true, default_value = defaults::UPSTREAM_API_KEY)]
    pub proxy_api_key: Secret,

    /// Shadow mode: forward every thread unchanged and only report (in
    /// headers) what compression would have done.
    #[arg(long, env = "CONDENSE_PROXY_SHADOW")]
    pub proxy_shadow: bool,

    /// Seconds a proxied response may send nothing before it is cut.
    #[arg(long, env = "CONDENSE_PROXY_IDLE_TIMEOUT", default_value_t = defaults::PROXY_IDLE_TIMEOUT_SECS)]
    pub proxy_idle_timeout: u64,

    /// Provider-exact counts (`count: "provider"`) of OpenAI threads ask
    /// this base URL's `/responses/input_tokens` (e.g. `https://api.openai.com/v1`);
    /// unset: they are local estimates. Apart from the proxy's URL, so
    /// that switching counts on does not switch the proxy on.
    #[arg(long, env = "CONDENSE_COUNT_OPENAI_URL", hide_env_values = true)]
    pub count_openai_url: Option<String>,

    /// Provider-exact counts of Anthropic threads ask this base URL's
    /// `/v1/messages/count_tokens` (e.g. `https://api.anthropic.com`).
    #[arg(long, env = "CONDENSE_COUNT_ANTHROPIC_URL", hide_env_values = true)]
    pub count_anthropic_url: Option<String>,

    /// Provider API key of the counting calls; never logged.
    #[arg(long, env = "CONDENSE_COUNT_API_KEY", hide_env_values = true, default_value = defaults::UPSTREAM_API_KEY)]
    pub count_api_key: Secret,

    /// Seconds a provider-exact count may take before the local estimate
    /// is answered instead.
    #[arg(long, env = "CONDENSE_PROVIDER_COUNT_TIMEOUT_SECS", default_value_t = defaults::PROVIDER_COUNT_TIMEOUT_SECS)]
    pub provider_count_timeout_secs: u64,

    /// API keys, comma-separated; each a key and its permissions:
    /// `KEY`, `KEY llm`, `KEY provider`, `KEY llm provider` (`llm`: may
    /// have the upstream LLM write summaries; `provider`: may spend the
    /// operator's provider key). Unset, and no keys file: no access
    /// control. Prefer the environment or the file to the flag.
    #[arg(
        long,
        env = "CONDENSE_API_KEYS",
        hide_env_values = true,
        value_delimiter = ','
    )]
    pub api_keys: Vec<Secret>,

    /// File of API keys, one key and its permissions per line (`#` comments);
    /// re-read on SIGHUP and when it changes.
    #[arg(long, env = "CONDENSE_API_KEYS_FILE")]
    pub api_keys_file: Option<PathBuf>,

    /// Seconds between looks at the API keys file.
    #[arg(long, env = "CONDENSE_API_KEYS_RELOAD_SECS", default_value_t = defaults::API_KEYS_RELOAD_SECS)]
    pub api_keys_reload_secs: u64,

    /// With API keys, `GET /metrics` needs one too (by default it stays open).
    #[arg(long, env = "CONDENSE_METRICS_REQUIRE_KEY")]
    pub metrics_require_key: bool,

    /// Requests a second per API key (per client address without keys); 0: no limit.
    #[arg(long, env = "CONDENSE_RATE_LIMIT_PER_SEC", default_value_t = defaults::RATE_LIMIT_PER_SEC)]
    pub rate_limit_per_sec: f64,

    /// Requests a caller may send at once before the rate applies.
    #[arg(long, env = "CONDENSE_RATE_LIMIT_BURST", default_value_t = defaults::RATE_LIMIT_BURST)]
    pub rate_limit_burst: u32,

    /// Origins a browser may call condense from (comma-separated exact
    /// origins, or `*`); unset: no CORS.
    #[arg(long, env = "CONDENSE_CORS_ORIGINS", value_delimiter = ',')]
    pub cors_origins: Vec<String>,

    /// Host names a request's `Host` may carry (comma-separated, no port;
    /// `*`: any). Unset: without API keys, only IP addresses and
    /// `localhost` (DNS rebinding needs a name); with keys, any name.
    #[arg(long, env = "CONDENSE_ALLOWED_HOSTS", value_delimiter = ',')]
    pub allowed_hosts: Vec<String>,

    /// Most messages a thread may hold (413 above); 0: no limit.
    #[arg(long, env = "CONDENSE_MAX_MESSAGES", default_value_t = defaults::MAX_MESSAGES)]
    pub max_messages: usize,

    /// Most characters of text a thread (or a `text`) may hold (413 above); 0: no limit.
    #[arg(long, env = "CONDENSE_MAX_TOTAL_CHARS", default_value_t = defaults::MAX_TOTAL_CHARS)]
    pub max_total_chars: usize,

    /// Requests at work at once; the next gets 503 `overloaded` at once; 0: no limit.
    #[arg(long, env = "CONDENSE_MAX_CONCURRENCY", default_value_t = defaults::MAX_CONCURRENCY)]
    pub max_concurrency: usize,
    /// Bytes of memory the requests at work may hold at once; a request
    /// whose worst case (from its `Content-Length`, see the README's
    /// "Memory sizing") does not fit in what is free gets 503 `overloaded`
    /// before its body is read; 0: no budget.
    #[arg(long, env = "CONDENSE_MEMORY_BUDGET_BYTES", default_value_t = defaults::MEMORY_BUDGET_BYTES)]
    pub memory_budget_bytes: u64,

    /// Seconds a client has to send a request's headers (from the
    /// connection's start, or from the first byte of a later request);
    /// slower connections are closed.
    #[arg(long, env = "CONDENSE_HEADER_READ_TIMEOUT_SECS", default_value_t = defaults::HEADER_READ_TIMEOUT_SECS)]
    pub header_read_timeout_secs: u64,

    /// Seconds a kept-alive connection may idle between requests, and a
    /// response may wait for its client to read it, before the connection is closed.
    #[arg(long, env = "CONDENSE_IDLE_TIMEOUT_SECS", default_value_t = defaults::IDLE_TIMEOUT_SECS)]
    pub idle_timeout_secs: u64,

    /// Most client connections open at once; more wait to be accepted.
    /// Lowered at start-up if the open-files limit cannot hold them.
    #[arg(long, env = "CONDENSE_MAX_CONNECTIONS", default_value_t = defaults::MAX_CONNECTIONS)]
    pub max_connections: usize,

    /// Most connections one client address may hold open (an IPv6 address
    /// counts by its /64); past it a new one is answered 503 and closed. 0: no limit.
    #[arg(long, env = "CONDENSE_MAX_CONNECTIONS_PER_ADDRESS", default_value_t = defaults::MAX_CONNECTIONS_PER_ADDRESS)]
    pub max_connections_per_address: usize,

    /// A second address serving only `/healthz`, `/readyz` and `/metrics`,
    /// with connections of its own: probes answered however busy the main
    /// listener is. Unset: none.
    #[arg(long, env = "CONDENSE_PROBE_LISTEN")]
    pub probe_listen: Option<SocketAddr>,

    /// Most connections open at once on the probe listener.
    #[arg(long, env = "CONDENSE_PROBE_MAX_CONNECTIONS", default_value_t = defaults::PROBE_MAX_CONNECTIONS)]
    pub probe_max_connections: usize,

    /// Seconds between background pings of the summary cache; `/readyz`
    /// reports what the last ping (or request) found, without a ping of its own.
    #[arg(long, env = "CONDENSE_CACHE_CHECK_SECS", default_value_t = defaults::CACHE_CHECK_SECS)]
    pub cache_check_secs: u64,

    /// Seconds a background ping may take before the cache counts as down.
    #[arg(long, env = "CONDENSE_CACHE_CHECK_TIMEOUT_SECS", default_value_t = defaults::CACHE_CHECK_TIMEOUT_SECS)]
    pub cache_check_timeout_secs: u64,
}

impl Default for Config {
    /// The defaults alone, ignoring the environment (for tests and embedding).
    fn default() -> Self {
        Self {
            listen: defaults::LISTEN,
            body_limit: defaults::BODY_LIMIT,
            request_timeout: defaults::REQUEST_TIMEOUT_SECS,
            profiles_file: None,
            models_file: None,
            default_model: defaults::DEFAULT_MODEL.into(),
            log_format: defaults::LOG_FORMAT,
            upstream_url: None,
            upstream_kind: defaults::UPSTREAM_KIND,
            upstream_api_key: Secret::new(defaults::UPSTREAM_API_KEY),
            upstream_model: defaults::UPSTREAM_MODEL.into(),
            upstream_allowed_models: Vec::new(),
            upstream_timeout: defaults::UPSTREAM_TIMEOUT_SECS,
            upstream_retry_budget: defaults::UPSTREAM_RETRY_BUDGET_SECS,
            upstream_max_retries: defaults::UPSTREAM_MAX_RETRIES,
            upstream_max_concurrency: defaults::UPSTREAM_MAX_CONCURRENCY,
            precompute_concurrency: crate::compress::PRECOMPUTE_CONCURRENCY,
            upstream_context_window: defaults::UPSTREAM_CONTEXT_WINDOW,
            upstream_result_chars: defaults::UPSTREAM_RESULT_CHARS,
            database_url: None,
            cache_path: PathBuf::from(defaults::CACHE_PATH),
            cache_ttl_days: defaults::CACHE_TTL_DAYS,
            cache_max_rows: defaults::CACHE_MAX_ROWS,
            cache_claim_lease_secs: defaults::CACHE_CLAIM_LEASE_SECS,
            db_max_connections: defaults::DB_MAX_CONNECTIONS,
            db_acquire_timeout_ms: defaults::DB_ACQUIRE_TIMEOUT_MS,
            proxy_openai_url: None,
            proxy_anthropic_url: None,
            proxy_api_key: Secret::new(defaults::UPSTREAM_API_KEY),
            proxy_shadow: false,
            proxy_idle_timeout: defaults::PROXY_IDLE_TIMEOUT_SECS,
            count_openai_url: None,
            count_anthropic_url: None,
            count_api_key: Secret::new(defaults::UPSTREAM_API_KEY),
            provider_count_timeout_secs: defaults::PROVIDER_COUNT_TIMEOUT_SECS,
            api_keys: Vec::new(),
            api_keys_file: None,
            api_keys_reload_secs: defaults::API_KEYS_RELOAD_SECS,
            metrics_require_key: false,
            rate_limit_per_sec: defaults::RATE_LIMIT_PER_SEC,
            rate_limit_burst: defaults::RATE_LIMIT_BURST,
            cors_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            max_messages: defaults::MAX_MESSAGES,
            max_total_chars: defaults::MAX_TOTAL_CHARS,
            max_concurrency: defaults::MAX_CONCURRENCY,
            memory_budget_bytes: defaults::MEMORY_BUDGET_BYTES,
            header_read_timeout_secs: defaults::HEADER_READ_TIMEOUT_SECS,
            idle_timeout_secs: defaults::IDLE_TIMEOUT_SECS,
            max_connections: defaults::MAX_CONNECTIONS,
            max_connections_per_address: defaults::MAX_CONNECTIONS_PER_ADDRESS,
            probe_listen: None,
            probe_max_connections: defaults::PROBE_MAX_CONNECTIONS,
            cache_check_secs: defaults::CACHE_CHECK_SECS,
            cache_check_timeout_secs: defaults::CACHE_CHECK_TIMEOUT_SECS,
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
            claim_lease: Duration::from_secs(self.cache_claim_lease_secs),
        }
    }

    /// How the cache's background check runs.
    pub fn cache_check(&self) -> HealthCheck {
        HealthCheck {
            every: Duration::from_secs(self.cache_check_secs.max(1)),
            timeout: Duration::from_secs(self.cache_check_timeout_secs.max(1)),
        }
    }

    /// The access settings: the keys and their file.
    pub fn access(&self) -> AccessConfig {
        AccessConfig {
            keys: self.api_keys.clone(),
            file: self.api_keys_file.clone(),
            reload_every: Duration::from_secs(self.api_keys_reload_secs.max(1)),
        }
    }

    /// How much a thread may hold.
    pub fn thread_limits(&self) -> Limits {
        Limits {
            max_messages: self.max_messages,
            max_chars: self.max_total_chars,
        }
    }

    /// How connections are served (the connection cap not yet fitted to
    /// the open-files limit: see [`crate::serve::connection_budget`]).
    pub fn serve_options(&self) -> ServeOptions {
        ServeOptions {
            header_read_timeout: Duration::from_secs(self.header_read_timeout_secs.max(1)),
            idle_timeout: Duration::from_secs(self.idle_timeout_secs.max(1)),
            max_connections: self.max_connections.max(1),
            max_connections_per_address: self.max_connections_per_address,
        }
    }

    /// How the probe listener serves: the same timeouts, its own small cap,
    /// and a quarter of it per address (at least 2): the orchestrator's
    /// probes come from its node's address and need one or two at a time,
    /// so another client reaching the port (any pod, without a network
    /// policy) cannot hold them all.
    pub fn probe_serve_options(&self) -> ServeOptions {
        let max = self.probe_max_connections.max(1);
        ServeOptions {
            max_connections: max,
            max_connections_per_address: (max / 4).max(2),
            ..self.serve_options()
        }
    }

    /// Open files the settings need besides client connections (see
    /// [`crate::serve::reserved_fds`]).
    pub fn reserved_fds(&self) -> u64 {
        let upstream = self.upstream().map_or(0, |u| u.max_concurrency);
        let probes = self.probe_listen.map_or(0, |_| self.probe_max_connections);
        crate::serve::reserved_fds(self.db_max_connections, upstream, probes)
    }

    /// Where provider-exact counts are asked: the proxy's providers.
    pub fn provider_count(&self) -> ProviderCountConfig {
        ProviderCountConfig {
            openai_url: self.count_openai_url.clone(),
            anthropic_url: self.count_anthropic_url.clone(),
            api_key: self.count_api_key.clone(),
            timeout: Duration::from_secs(self.provider_count_timeout_secs.max(1)),
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
    use clap::{CommandFactory, FromArgMatches};

    use super::*;

    /// Parses `args` as the binary would, but with every `env = …` removed,
    /// so `CONDENSE_*` variables of the test run (the test command sets some)
    /// cannot stand in for a default.
    fn parse_without_env(args: &[&str]) -> Config {
        let matches = Config::command()
            .mut_args(|a| a.env(None::<&str>))
            .try_get_matches_from(args)
            .unwrap();
        Config::from_arg_matches(&matches).unwrap()
    }

    #[test]
    fn clap_defaults_equal_default_impl() {
        assert_eq!(parse_without_env(&["condense"]), Config::default());
    }

    #[test]
    fn parsing_without_env_still_reads_flags() {
        // Guards the helper: it must drop the environment, not the flags.
        let c = parse_without_env(&["condense", "--cache-claim-lease-secs", "7"]);
        assert_eq!(c.cache_claim_lease_secs, 7);
        assert_ne!(c, Config::default());
    }

    #[test]
    fn cache_options_carry_the_claim_lease() {
        let c = Config {
            cache_claim_lease_secs: 45,
            ..Config::default()
        };
        assert_eq!(c.cache_options().claim_lease, Duration::from_secs(45));
        assert_eq!(
            Config::default().cache_options().claim_lease,
            CacheOptions::DEFAULT_CLAIM_LEASE
        );
    }
}
