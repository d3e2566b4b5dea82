//! `[access]`: who may call condense, how often, and from which pages and
//! host names; and `[models]`: the model registry and the named profiles.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::duration;
use crate::guard::AccessConfig;
use crate::upstream::Secret;

#[derive(Debug, Clone, PartialEq, Args)]
pub struct AccessSettings {
    /// API keys, comma-separated; each a key and its permissions:
    /// `KEY`, `KEY llm`, `KEY provider`, `KEY llm provider` (`llm`: may
    /// have the upstream LLM write summaries; `provider`: may spend the
    /// operator's provider key). Unset, and no keys file: no access
    /// control. Prefer the environment or the file to the flag.
    #[arg(
        id = "access.api_keys",
        long = "api-keys",
        hide_env_values = true,
        value_delimiter = ','
    )]
    pub api_keys: Vec<Secret>,

    /// File of API keys, one key and its permissions per line (`#` comments);
    /// re-read on SIGHUP and when it changes.
    #[arg(id = "access.api_keys_file", long = "api-keys-file")]
    pub api_keys_file: Option<PathBuf>,

    /// Time between looks at the API keys file.
    // How often the API keys file is re-read (it is also re-read on SIGHUP).
    #[arg(
        id = "access.api_keys_reload",
        long = "api-keys-reload",
        value_parser = duration::parse,
        default_value = "5s"
    )]
    pub api_keys_reload: Duration,

    /// With API keys, `GET /metrics` needs one too (by default it stays open).
    #[arg(id = "access.metrics_require_key", long = "metrics-require-key")]
    pub metrics_require_key: bool,

    /// Requests a second per API key (per client address without keys); 0: no limit.
    #[arg(
        id = "access.rate_limit_per_sec",
        long = "rate-limit-per-sec",
        default_value_t = 0.0
    )]
    pub rate_limit_per_sec: f64,

    /// Requests a caller may send at once before the rate applies.
    #[arg(
        id = "access.rate_limit_burst",
        long = "rate-limit-burst",
        default_value_t = 20
    )]
    pub rate_limit_burst: u32,

    /// Origins a browser may call condense from (comma-separated exact
    /// origins, or `*`); unset: no CORS.
    #[arg(
        id = "access.cors_origins",
        long = "cors-origins",
        value_delimiter = ','
    )]
    pub cors_origins: Vec<String>,

    /// Host names a request's `Host` may carry (comma-separated, no port;
    /// `*`: any). Unset: without API keys, only IP addresses and
    /// `localhost` (DNS rebinding needs a name); with keys, any name.
    #[arg(
        id = "access.allowed_hosts",
        long = "allowed-hosts",
        value_delimiter = ','
    )]
    pub allowed_hosts: Vec<String>,
}

impl AccessSettings {
    /// The keys and their file, as the access guard takes them.
    pub fn keys(&self) -> AccessConfig {
        AccessConfig {
            keys: self.api_keys.clone(),
            file: self.api_keys_file.clone(),
            reload_every: self.api_keys_reload.max(super::MIN_PERIOD),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Args)]
pub struct ModelSettings {
    /// Model assumed when a request names none.
    #[arg(
        id = "models.default_model",
        long = "default-model",
        default_value = "gpt-4o"
    )]
    pub default_model: String,

    /// TOML file replacing the embedded model registry (same shape as data/models.toml).
    #[arg(id = "models.models_file", long = "models-file")]
    pub models_file: Option<PathBuf>,

    /// File of named profiles: TOML (`[profiles.NAME]` tables), or YAML (`profiles:` → `NAME:`) when it ends in `.yaml`/`.yml`.
    #[arg(id = "models.profiles_file", long = "profiles-file")]
    pub profiles_file: Option<PathBuf>,
}
