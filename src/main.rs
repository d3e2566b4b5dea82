use std::process::ExitCode;

use condense::cli::{self, Command, Parsed};
use condense::config::load::LoadError;
use condense::{Application, Config, telemetry};

fn main() -> ExitCode {
    let parsed = match Parsed::from_args(std::env::args_os()) {
        Ok(parsed) => parsed,
        Err(LoadError::Clap(e)) => e.exit(),
        Err(LoadError::Invalid(line)) => return cli::invalid(&line),
    };
    match (&parsed.cli.command, &parsed.invalid) {
        (Some(Command::Config), _) => parsed.show(),
        (Some(Command::Openapi), _) => {
            print!("{}", condense::http::openapi::yaml());
            ExitCode::SUCCESS
        }
        (_, Some(line)) => cli::invalid(line),
        (Some(Command::Healthcheck(check)), None) => check.run(&parsed.cli.config),
        (None, None) => serve(parsed.cli.config),
    }
}

/// Serves until stopped; a failure to start is one line and exit 2.
#[tokio::main]
async fn serve(config: Config) -> ExitCode {
    telemetry::init(config.server.log_format);
    let app = match Application::build(config).await {
        Ok(app) => app,
        Err(e) => {
            eprintln!(
                "condense: cannot start: {}",
                cli::one_line(&format!("{e:#}"))
            );
            return ExitCode::from(2);
        }
    };
    tracing::info!(addr = %app.local_addr(), "condense listening");
    match app.run_until_stopped().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("condense: {e}");
            ExitCode::FAILURE
        }
    }
}
