//! condense: a stateless HTTP service that keeps LLM agents inside their
//! context window.
//!
//! One folder per concern, each layer using only those below it (the code
//! map is in `ARCHITECTURE.md`); the domain modules know nothing of HTTP,
//! so they are tested without a server.

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
