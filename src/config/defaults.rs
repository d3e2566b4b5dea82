//! The default of every setting that has one, written once: clap's
//! `default_value`s name these, and `Default` of each settings group is
//! clap's parse of nothing (see `config::from_defaults`), so the binary and
//! the tests cannot drift apart. Durations are text in the one syntax of
//! `config::duration`, as `--help` and `condense config` show them. Those of
//! the cache come from [`CacheOptions`], which embedders use without a
//! `Config` (a unit test checks the text against them).
//!
//! [`CacheOptions`]: crate::cache::CacheOptions

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};

use super::LogFormat;
use crate::cache::CacheOptions;
use crate::upstream::Kind;

pub const LISTEN: SocketAddr = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 8080));
pub const BODY_LIMIT: usize = 8 * 1024 * 1024;
/// LLM summaries of long spans take a while on small servers.
pub const REQUEST_TIMEOUT: &str = "120s";
pub const DEFAULT_MODEL: &str = "gpt-4o";
pub const LOG_FORMAT: LogFormat = LogFormat::Text;
pub const UPSTREAM_KIND: Kind = Kind::OpenAi;
/// No key: a local upstream needs none.
pub const UPSTREAM_API_KEY: &str = "";
pub const UPSTREAM_MODEL: &str = "gpt-4o-mini";
/// Half the request time limit: one slow call still leaves room to answer.
pub const UPSTREAM_TIMEOUT: &str = "60s";
/// Within the request time limit, so a request sees its retries' outcome.
pub const UPSTREAM_RETRY_BUDGET: &str = "90s";
pub const UPSTREAM_MAX_RETRIES: u32 = 4;
pub const UPSTREAM_MAX_CONCURRENCY: usize = 4;
pub const UPSTREAM_RESULT_CHARS: usize = crate::summarize::llm::RESULT_CHARS;
pub const UPSTREAM_CONTEXT_WINDOW: usize = 128_000;
pub const CACHE_PATH: &str = "condense-cache.sqlite3";
/// [`CacheOptions::DEFAULT_TTL`].
pub const CACHE_TTL: &str = "30d";
pub const CACHE_MAX_ROWS: u64 = CacheOptions::DEFAULT_MAX_ROWS;
/// [`CacheOptions::DEFAULT_CLAIM_LEASE`].
pub const CACHE_CLAIM_LEASE: &str = "30s";
pub const DB_MAX_CONNECTIONS: u32 = CacheOptions::DEFAULT_MAX_CONNECTIONS;
/// Shorter than `CacheOptions`' own default: a request waits this long
/// for a connection before answering uncached.
pub const DB_ACQUIRE_TIMEOUT: &str = "500ms";
/// A stream that sends nothing for this long is cut; a healthy one never is.
pub const PROXY_IDLE_TIMEOUT: &str = "5m";
/// A counting call is a short request: a provider slower than this is
/// answered with the local estimate.
pub const COUNT_TIMEOUT: &str = "10s";
/// How often the API keys file is re-read (it is also re-read on SIGHUP).
pub const API_KEYS_RELOAD: &str = "5s";
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
/// `admission::memory`. Derived from the shipped Deployment's 1 GiB limit
/// (see `admission::memory::limit_for` and the README's "Memory sizing"):
/// 1 GiB = the idle process (96 MiB) + this + a quarter of this.
pub const MEMORY_BUDGET_BYTES: u64 = 640 * 1024 * 1024;
/// hyper's own default for reading a request head.
pub const HEADER_READ_TIMEOUT: &str = "30s";
/// Longer than the 60 s idle timeout of common load balancers, so that
/// they, not condense, close a kept-alive connection first (nginx: 75 s).
pub const IDLE_TIMEOUT: &str = "75s";
/// Each may also hold a proxied provider connection: 1024 connections
/// fit in about 2,100 open files (see `serve::connection_budget`).
pub const MAX_CONNECTIONS: usize = 1024;

// Probes and connection fairness (`cache::health`, `serve`).
/// Often enough for a readiness probe every 10 s to see a change within
/// one period; one `SELECT 1` per 5 s is nothing to the database.
pub const CACHE_CHECK_INTERVAL: &str = "5s";
/// As long as `/readyz` used to wait for its own ping.
pub const CACHE_CHECK_TIMEOUT: &str = "2s";
/// A quarter of the default connection cap: one address cannot take the
/// other three quarters, yet a host running many agents (all of them
/// 127.0.0.1 to a local condense, each holding a few pooled
/// connections: 20 agents are well under 100) never meets it.
pub const MAX_CONNECTIONS_PER_ADDRESS: usize = 256;
/// The probe listener serves an orchestrator's few probes and a metrics
/// scraper, not clients.
pub const PROBE_MAX_CONNECTIONS: usize = 16;
