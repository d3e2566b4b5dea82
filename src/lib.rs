//! condense: a stateless HTTP service that keeps LLM agents inside their
//! context window.
//!
//! Layout, one folder per concern, each layer using only those below it:
//! - [`thread`]: the one internal conversation model, parsed at the
//!   boundary from three wire formats (OpenAI Chat Completions, OpenAI
//!   Responses, Anthropic Messages), validated and bounded;
//! - [`tokens`]: encodings, the model registry, counting a thread;
//! - [`policy`]: profiles, the summarize verdict, tool-result clearing rules;
//! - [`summarize`]: the summarizers (heuristic, LLM, per iteration), the
//!   canonical span and its cache key, anchors and the fidelity receipt,
//!   and the summary service (cache, single flight, fallback);
//! - [`compress`]: the one way through a compression, for every caller;
//! - [`cache`]: the summary cache (PostgreSQL or embedded SQLite), claims
//!   across replicas, pruning, health;
//! - [`upstream`]: the client of the summarizing LLM and of providers'
//!   counting endpoints (retries, the secret key);
//! - [`proxy`]: the drop-in proxy, preparing a provider request and relaying it;
//! - [`http`]: routes, extractors, middleware; [`error`] owns the problem+json shape;
//! - [`guard`]: API keys, the rate limit, allowed hosts and CORS origins;
//! - [`admission`]: the concurrency limit, the memory budget, and the
//!   ticket a request or background job holds them by;
//! - [`metrics`]: the Prometheus registry every layer records into;
//! - [`redact`]: credentials in URLs hidden from logs and errors, for every layer;
//! - [`config`], [`telemetry`], [`state`], [`startup`], [`serve`]: wiring;
//!   [`serve`] accepts connections (a cap, timeouts for slow clients);
//! - [`cli`] and [`healthcheck`]: the command line, and the self-check a
//!   container's `HEALTHCHECK` runs (the runtime image has no curl).
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
