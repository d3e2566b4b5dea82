//! Configuration from flags and `CONDENSE_*` environment variables.
//!
//! Every default runs on a laptop: no file, no database, no upstream.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Parser, ValueEnum};

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

    /// Per-request time limit, in seconds; slower requests get 503.
    #[arg(long, env = "CONDENSE_REQUEST_TIMEOUT", default_value_t = 30)]
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
}

impl Default for Config {
    /// The defaults alone, ignoring the environment (for tests and embedding).
    fn default() -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            body_limit: 8 * 1024 * 1024,
            request_timeout: 30,
            profiles_file: None,
            models_file: None,
            default_model: "gpt-4o".into(),
            log_format: LogFormat::Text,
        }
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
