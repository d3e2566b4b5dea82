//! condense: a stateless HTTP service that keeps LLM agents inside their
//! context window.
//!
//! Layout, one folder per concern:
//! - [`thread`]: the one internal conversation model, parsed from OpenAI or
//!   Anthropic wire formats at the boundary;
//! - [`tokens`]: encodings, the model registry, counting a thread;
//! - [`policy`]: profiles and the summarize verdict;
//! - [`http`]: routes, extractors, middleware; [`error`] owns the problem+json shape;
//! - [`guard`]: API keys, the rate limit, the concurrency limit, CORS origins;
//! - [`metrics`]: the Prometheus registry every layer records into;
//! - [`config`], [`telemetry`], [`state`], [`startup`], [`serve`]: wiring;
//!   [`serve`] accepts connections (a cap, timeouts for slow clients);
//! - [`cli`] and [`healthcheck`]: the command line, and the self-check a
//!   container's `HEALTHCHECK` runs (the runtime image has no curl).
//!
//! The domain modules know nothing of HTTP, so they are tested without a server.

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
