//! condense: a stateless HTTP service that keeps LLM agents inside their
//! context window.
//!
//! Layout, one folder per concern, each layer using only those below it:
//! - [`thread`]: the one conversation model, parsed from three wire formats;
//! - [`tokens`]: encodings, the model registry, counting a thread;
//! - [`policy`]: profiles, the summarize verdict, tool-result clearing rules;
//! - [`summarize`]: the summarizers, anchors, the fidelity receipt, and the
//!   summary service (cache, single flight, fallback);
//! - [`compress`]: the one way through a compression, for every caller;
//! - [`cache`]: the summary cache (PostgreSQL or SQLite), claims, pruning;
//! - [`upstream`]: the summarizing LLM's client and providers' counting;
//! - [`proxy`]: the drop-in proxy; [`http`]: routes, extractors, middleware;
//!   [`error`] owns the problem+json shape;
//! - [`guard`]: API keys, the rate limit, allowed hosts, CORS origins;
//! - [`admission`]: the concurrency limit and the memory budget;
//! - [`metrics`], [`redact`]: leaves every layer may use;
//! - [`config`], [`telemetry`], [`state`], [`startup`], [`serve`], [`cli`],
//!   [`healthcheck`]: wiring, the accept loop, the command line.
//!
//! The domain modules know nothing of HTTP, so they are tested without a server.

pub mod admission;
pub mod cache;
pub mod cli;
pub mod compress;
pub mod config;
pub mod error;
pub mod guard;
pub mod healthcheck;
pub mod http;
pub mod metrics;
pub mod policy;
pub mod proxy;
pub mod redact;
pub mod serve;
pub mod startup;
pub mod state;
pub mod summarize;
pub mod telemetry;
pub mod thread;
pub mod tokens;
pub mod upstream;

pub use config::Config;
pub use startup::Application;
pub use state::AppState;
