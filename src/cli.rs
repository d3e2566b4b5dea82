//! The command line: serving (no subcommand), `healthcheck` or `config`, all
//! three from the same settings.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};

use crate::config::load::{self, LoadError, Loaded};
use crate::config::{Config, show};
use crate::healthcheck;

#[derive(Debug, Parser)]
#[command(
    name = "condense",
    version,
    about = "Keeps LLM agents inside their context window.",
    after_help = "Durations are a whole number and a unit: 500ms, 30s, 5m, 2h, 30d. \
                  Precedence: flag > environment > --config file > default."
)]
pub struct Cli {
    /// TOML file of settings, one section per heading below (`[server]`,
    /// `[cache]`, …), keys as in `condense config`; the environment and
    /// flags override it.
    #[arg(id = load::FILE_ARG, long = "config", env = "CONDENSE_CONFIG", value_name = "FILE")]
    pub config_file: Option<PathBuf>,
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
    /// Print the configuration in effect as a `--config` file (secrets
    /// hidden, each value with its source), and exit: 0 when it is valid.
    Config,
    /// Print the API's OpenAPI document as YAML (what `GET /openapi.json`
    /// serves; the repository's `openapi.yaml`), and exit.
    Openapi,
}

/// The command line read in layers (see [`crate::config::load`]) and validated.
pub struct Parsed {
    pub cli: Cli,
    pub loaded: Loaded,
    /// Why the configuration cannot run, as one line.
    pub invalid: Option<String>,
}

impl Parsed {
    /// Reads `args` (the program's name first) and the environment.
    pub fn from_args(args: impl IntoIterator<Item = OsString>) -> Result<Self, LoadError> {
        let loaded = load::load(Cli::command(), args)?;
        let cli = Cli::from_arg_matches(&loaded.matches).map_err(LoadError::Clap)?;
        let invalid = cli
            .config
            .validate()
            .err()
            .map(|e| e.describe(|id, value| loaded.name(id, value)));
        Ok(Self {
            cli,
            loaded,
            invalid,
        })
    }

    /// Runs `condense config`; its files are read as the server reads them,
    /// so "valid" means the server would start.
    pub fn show(&self) -> ExitCode {
        print!("{}", show::render(&self.loaded));
        match &self.invalid {
            Some(line) => invalid(line),
            None => match crate::state::AppState::new(self.cli.config.clone()) {
                Ok(_) => ExitCode::SUCCESS,
                Err(e) => invalid(&format!("{e:#}")),
            },
        }
    }
}

/// Says why the configuration cannot run, in one line, and the exit code.
pub fn invalid(line: &str) -> ExitCode {
    eprintln!("condense: invalid configuration: {}", one_line(line));
    ExitCode::from(2)
}

/// `text` on one line: a parser's report keeps its sentences, not its drawing.
pub fn one_line(text: &str) -> String {
    let drawing = |l: &str| {
        l.starts_with('|')
            || l.split_once(" |")
                .is_some_and(|(n, _)| n.parse::<u32>().is_ok())
    };
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !drawing(l))
        .collect();
    lines.join("; ")
}

#[derive(Debug, Args)]
pub struct HealthcheckArgs {
    /// Seconds the check may take in all.
    #[arg(long, default_value_t = healthcheck::DEFAULT_TIMEOUT_SECS)]
    pub timeout: u64,
}

impl HealthcheckArgs {
    /// Checks the probe listener when there is one (it answers however busy
    /// the main one is), else the main one.
    pub fn run(&self, config: &Config) -> ExitCode {
        let timeout = Duration::from_secs(self.timeout.max(1));
        let listen = config.server.probe_listen.unwrap_or(config.server.listen);
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

#[cfg(test)]
mod tests {
    #[test]
    fn a_toml_report_is_one_line_of_its_sentences() {
        let err = toml::from_str::<toml::Table>("not a key file [").unwrap_err();
        let line = super::one_line(&format!("parsing the models file m.toml: {err}"));
        assert!(!line.contains('\n') && !line.contains('^'), "{line}");
        assert!(
            line.starts_with("parsing the models file m.toml: TOML parse error at line 1"),
            "{line}"
        );
    }
}
