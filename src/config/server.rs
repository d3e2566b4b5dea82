//! `[server]`: where condense listens and how it treats connections, and
//! `[limits]`: what one request may ask of it.

use std::net::SocketAddr;
use std::time::Duration;

use clap::Args;

use super::{LogFormat, duration};
use crate::serve::ServeOptions;
use crate::thread::Limits;

#[derive(Debug, Clone, PartialEq, Args)]
pub struct ServerSettings {
    /// Address to listen on.
    #[arg(
        id = "server.listen",
        long = "listen",
        default_value = "127.0.0.1:8080"
    )]
    pub listen: SocketAddr,

    /// Log format.
    #[arg(
        id = "server.log_format",
        long = "log-format",
        value_enum,
        default_value_t = LogFormat::Text
    )]
    pub log_format: LogFormat,

    /// A second address serving only `/healthz`, `/readyz` and `/metrics`,
    /// with connections of its own: probes answered however busy the main
    /// listener is. Unset: none.
    #[arg(id = "server.probe_listen", long = "probe-listen")]
    pub probe_listen: Option<SocketAddr>,

    /// Most client connections open at once; more wait to be accepted.
    /// Lowered at start-up if the open-files limit cannot hold them.
    // With a proxied connection each, 1024 fit in about 2,100 open files.
    #[arg(
        id = "server.max_connections",
        long = "max-connections",
        default_value_t = 1024
    )]
    pub max_connections: usize,

    /// Most connections one client address may hold open (an IPv6 address
    /// counts by its /64); past it a new one is answered 503 and closed. While
    /// other addresses hold connections, an address also holds no more than
    /// the cap has free, so a few hosts cannot fill it. 0: no limit.
    // A quarter of the cap: one address cannot take the rest, yet 20 local agents
    // (all 127.0.0.1, a few pooled connections each) stay well under it.
    #[arg(
        id = "server.max_connections_per_address",
        long = "max-connections-per-address",
        default_value_t = 256
    )]
    pub max_connections_per_address: usize,

    /// Most connections open at once on the probe listener.
    // An orchestrator's few probes and a metrics scraper, not clients.
    #[arg(
        id = "server.probe_max_connections",
        long = "probe-max-connections",
        default_value_t = 16
    )]
    pub probe_max_connections: usize,

    /// Time a client has to send a request's headers (from the connection's
    /// start, or from the first byte of a later request); slower connections
    /// are closed.
    // hyper's own default for reading a request head.
    #[arg(
        id = "server.header_read_timeout",
        long = "header-read-timeout",
        value_parser = duration::parse,
        default_value = "30s"
    )]
    pub header_read_timeout: Duration,

    /// Time a kept-alive connection may idle between requests, and a
    /// response may wait for its client to read it, before the connection is closed.
    // Past load balancers' 60 s, so they close an idle connection first (as nginx).
    #[arg(
        id = "server.idle_timeout",
        long = "idle-timeout",
        value_parser = duration::parse,
        default_value = "75s"
    )]
    pub idle_timeout: Duration,
}

impl ServerSettings {
    /// How connections are served (the connection cap not yet fitted to
    /// the open-files limit: see [`crate::serve::connection_budget`]).
    pub fn serve_options(&self) -> ServeOptions {
        ServeOptions {
            header_read_timeout: self.header_read_timeout,
            idle_timeout: self.idle_timeout,
            max_connections: self.max_connections.max(1),
            max_connections_per_address: self.max_connections_per_address,
        }
    }

    /// How the probe listener serves: the same timeouts, its own small cap,
    /// a quarter of it (at least 2) per address, so that another client
    /// reaching the port cannot hold the orchestrator's probes out.
    pub fn probe_serve_options(&self) -> ServeOptions {
        let max = self.probe_max_connections.max(1);
        ServeOptions {
            max_connections: max,
            max_connections_per_address: (max / 4).max(2),
            ..self.serve_options()
        }
    }
}

#[derive(Debug, Clone, PartialEq, Args)]
pub struct LimitSettings {
    /// Largest request body accepted, in bytes; larger ones get 413.
    #[arg(
        id = "limits.body_limit",
        value_name = "BYTES",
        long = "body-limit",
        default_value_t = 8 * 1024 * 1024
    )]
    pub body_limit: usize,

    /// Time limit of a request to the API; slower ones get 503. A bare
    /// number is seconds.
    // LLM summaries of long spans take a while on small servers.
    #[arg(
        id = "limits.request_timeout",
        long = "request-timeout",
        value_parser = duration::parse_secs,
        default_value = "120s"
    )]
    pub request_timeout: Duration,

    /// Most messages a thread may hold (413 above); 0: no limit.
    // Far above an agent's thread (the largest fixture has 300), far below what an 8 MiB
    // body of tiny messages could hold.
    #[arg(
        id = "limits.max_messages",
        long = "max-messages",
        default_value_t = 10_000
    )]
    pub max_messages: usize,

    /// Most characters of text a thread (or a `text`) may hold (413 above); 0: no limit.
    // About a million tokens of text: the largest context window on offer.
    #[arg(
        id = "limits.max_total_chars",
        long = "max-total-chars",
        default_value_t = 4_000_000
    )]
    pub max_total_chars: usize,

    /// Requests at work at once; the next gets 503 `overloaded` at once; 0: no limit.
    // On two cores the CPU work runs two at a time anyway; the others wait for the
    // upstream LLM or the database. Memory is bounded by the budget, not by this count.
    #[arg(
        id = "limits.max_concurrency",
        long = "max-concurrency",
        default_value_t = 16
    )]
    pub max_concurrency: usize,

    /// Bytes of memory the requests at work may hold at once; a request
    /// whose cost (from its `Content-Length`, then its body's shape: see
    /// docs/operations.md, "Memory sizing") does not fit in what is free gets
    /// 503 `overloaded`; 0: no budget.
    // From the shipped Deployment's 1 GiB limit (see `admission::memory::limit_for`,
    // docs/operations.md's "Memory sizing"): the idle process (96 MiB) + this + a quarter.
    #[arg(
        id = "limits.memory_budget_bytes",
        value_name = "BYTES",
        long = "memory-budget-bytes",
        default_value_t = 640 * 1024 * 1024
    )]
    pub memory_budget_bytes: u64,
}

impl LimitSettings {
    /// How much a thread may hold.
    pub fn thread(&self) -> Limits {
        Limits {
            max_messages: self.max_messages,
            max_chars: self.max_total_chars,
        }
    }
}
