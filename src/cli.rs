//! The command line: serving (no subcommand) or `healthcheck`.
//!
//! Every setting is a [`Config`] flag with its `CONDENSE_*` variable, shared
//! by both, so `condense healthcheck` run inside a container reads the same
//! `CONDENSE_LISTEN` as the server it checks.

use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::config::Config;
use crate::healthcheck;

#[derive(Debug, Parser)]
#[command(
    name = "condense",
    version,
    about = "Keeps LLM agents inside their context window."
)]
pub struct Cli {
    #[command(flatten)]
    pub config: Config,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Exit 0 when the condense at the configured listen address answers
    /// `GET /healthz` with 200, else 1 (for container health checks).
    Healthcheck(HealthcheckArgs),
}

#[derive(Debug, Args)]
pub struct HealthcheckArgs {
    /// Seconds the check may take in all.
    #[arg(long, default_value_t = healthcheck::DEFAULT_TIMEOUT_SECS)]
    pub timeout: u64,
}

impl HealthcheckArgs {
    /// Runs the check against the probe listener when there is one (it
    /// answers however busy the main one is), else `config.listen`, and says
    /// what it found on stderr (a container runtime keeps that output with
    /// the check's result).
    pub fn run(&self, config: &Config) -> ExitCode {
        let timeout = Duration::from_secs(self.timeout.max(1));
        let listen = config.probe_listen.unwrap_or(config.listen);
        match healthcheck::check(listen, timeout) {
            Ok(status) => {
                eprintln!(
                    "healthy: {} answered /healthz with {status}",
                    healthcheck::target(listen)
                );
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("unhealthy: {e}");
                ExitCode::FAILURE
            }
        }
    }
}
