//! Configuration: flags beat `CONDENSE_*` variables, which beat the TOML file
//! (`--config`), which beats the default. One struct per section (`[cache]`)
//! and heading of `--help`; a setting's clap id is its place in the file
//! (`cache.ttl`). Every default runs on a laptop.

use std::any::TypeId;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, ValueEnum};

mod access;
mod cache;
pub mod load;
mod providers;
mod server;
pub mod show;
mod upstream;
pub mod validate;

/// Lives with the profiles, the lowest layer that reads a duration (`provider_cache_ttl`).
pub use crate::policy::duration;
pub use access::{AccessSettings, ModelSettings};
pub use cache::CacheSettings;
pub use providers::{CountSettings, ProxySettings};
pub use server::{LimitSettings, ServerSettings};
pub use upstream::UpstreamSettings;
pub use validate::Invalid;

/// The shortest period of a timer, for an unvalidated `Config` holding zero
/// (tokio's intervals panic on a zero period).
pub(crate) const MIN_PERIOD: Duration = Duration::from_millis(1);

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line, for log shippers.
    Json,
}

#[derive(Debug, Clone, PartialEq, Default, Parser)]
#[command(
    name = "condense",
    version,
    about = "Keeps LLM agents inside their context window.",
    mut_args = with_env
)]
pub struct Config {
    #[command(flatten, next_help_heading = "Server [server]")]
    pub server: ServerSettings,
    #[command(flatten, next_help_heading = "Request limits [limits]")]
    pub limits: LimitSettings,
    #[command(flatten, next_help_heading = "Access [access]")]
    pub access: AccessSettings,
    #[command(flatten, next_help_heading = "Models and profiles [models]")]
    pub models: ModelSettings,
    #[command(flatten, next_help_heading = "Summarizing LLM [upstream]")]
    pub upstream: UpstreamSettings,
    #[command(flatten, next_help_heading = "Summary cache [cache]")]
    pub cache: CacheSettings,
    #[command(flatten, next_help_heading = "Proxy [proxy]")]
    pub proxy: ProxySettings,
    #[command(flatten, next_help_heading = "Provider-exact counts [count]")]
    pub count: CountSettings,
}

/// A setting's environment variable is its flag after `CONDENSE_`, and its
/// value's name in `--help` its type's (`DURATION`) or its key's last word.
fn with_env(mut arg: clap::Arg) -> clap::Arg {
    let Some((_, key)) = arg.get_id().as_str().split_once('.') else {
        return arg;
    };
    let key = key.to_string();
    if let (None, Some(long)) = (arg.get_env(), arg.get_long()) {
        let env = format!("CONDENSE_{}", long.to_uppercase().replace('-', "_"));
        arg = arg.env(env);
    }
    // clap names a value by its id unless told otherwise.
    let named = arg
        .get_value_names()
        .is_some_and(|n| n != [arg.get_id().as_str()]);
    if named || !arg.get_action().takes_values() {
        return arg;
    }
    let of = arg.get_value_parser().type_id();
    let name = [
        (TypeId::of::<Duration>(), "DURATION"),
        (TypeId::of::<SocketAddr>(), "ADDRESS"),
        (TypeId::of::<PathBuf>(), "FILE"),
        (TypeId::of::<usize>(), "N"),
        (TypeId::of::<u64>(), "N"),
        (TypeId::of::<u32>(), "N"),
        (TypeId::of::<f64>(), "RATE"),
    ]
    .into_iter()
    .find(|(t, _)| of == *t)
    .map_or_else(
        || key.rsplit('_').next().unwrap_or_default().to_uppercase(),
        |(_, n)| n.into(),
    );
    arg.value_name(name)
}

/// Each group's defaults: clap's parse of no arguments, without the environment.
macro_rules! default_from_clap {
    ($($group:ty),*) => {$(
        impl Default for $group {
            fn default() -> Self {
                let command = <$group as clap::Args>::augment_args(clap::Command::new("defaults"))
                    .mut_args(|a| a.env(None::<&str>));
                let matches = command.try_get_matches_from(["defaults"]).expect("the defaults parse");
                clap::FromArgMatches::from_arg_matches(&matches).expect("the defaults fit their fields")
            }
        }
    )*};
}
default_from_clap!(
    ServerSettings,
    LimitSettings,
    AccessSettings,
    ModelSettings,
    UpstreamSettings,
    CacheSettings,
    ProxySettings,
    CountSettings
);

impl Config {
    /// Open files the settings need besides client connections.
    pub fn reserved_fds(&self) -> u64 {
        let upstream = self
            .upstream
            .url()
            .map_or(0, |_| self.upstream.max_concurrency);
        let probes = self
            .server
            .probe_listen
            .map_or(0, |_| self.server.probe_max_connections);
        crate::serve::reserved_fds(self.cache.db_max_connections, upstream, probes)
    }
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, FromArgMatches};

    use super::*;
    use crate::cache::CacheOptions;

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
        let c = parse_without_env(&["condense", "--cache-claim-lease", "7s"]);
        assert_eq!(c.cache.claim_lease, Duration::from_secs(7));
        assert_ne!(c, Config::default());
    }

    #[test]
    fn the_cache_defaults_are_the_cache_modules() {
        let o = Config::default().cache.options();
        assert_eq!(o.ttl, CacheOptions::DEFAULT_TTL);
        assert_eq!(o.claim_lease, CacheOptions::DEFAULT_CLAIM_LEASE);
        assert_eq!(o.max_rows, CacheOptions::DEFAULT_MAX_ROWS);
        assert_eq!(o.max_connections, CacheOptions::DEFAULT_MAX_CONNECTIONS);
        assert_eq!(o.acquire_timeout, CacheOptions::DEFAULT_ACQUIRE_TIMEOUT);
    }

    #[test]
    fn cache_options_carry_the_claim_lease() {
        let c = CacheSettings {
            claim_lease: Duration::from_secs(45),
            ..Default::default()
        };
        assert_eq!(c.options().claim_lease, Duration::from_secs(45));
    }

    #[test]
    fn every_setting_is_a_section_and_key() {
        // `load` and `show` find a setting's place in the file from its id.
        for arg in Config::command().get_arguments() {
            let id = arg.get_id().as_str();
            if matches!(id, "help" | "version") {
                continue;
            }
            let (section, key) = id.split_once('.').unwrap_or_else(|| panic!("{id}"));
            assert!(!section.is_empty() && !key.is_empty() && !key.contains('.'));
            let long = arg.get_long().unwrap_or_else(|| panic!("{id} has a flag"));
            let env = format!("CONDENSE_{}", long.to_uppercase().replace('-', "_"));
            assert_eq!(arg.get_env().and_then(|e| e.to_str()), Some(env.as_str()));
        }
    }
}
