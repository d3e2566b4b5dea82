use std::process::ExitCode;

use condense::cli::{self, Command, Parsed};
use condense::config::load::LoadError;
use condense::{Application, Config, telemetry};

fn main() -> anyhow::Result<ExitCode> {
    let parsed = match Parsed::from_args(std::env::args_os()) {
        Ok(parsed) => parsed,
        Err(LoadError::Clap(e)) => e.exit(),
        Err(LoadError::Invalid(line)) => return Ok(cli::invalid(&line)),
    };
    let warnings = &parsed.loaded.warnings;
    match (&parsed.cli.command, &parsed.invalid) {
        (Some(Command::Config), _) => {
            warnings
                .iter()
                .for_each(|w| eprintln!("condense: warning: {w}"));
            Ok(parsed.show())
        }
        (_, Some(line)) => Ok(cli::invalid(line)),
        (Some(Command::Healthcheck(check)), None) => Ok(check.run(&parsed.cli.config)),
        (None, None) => serve(parsed.cli.config, parsed.loaded.warnings),
    }
}

#[tokio::main]
async fn serve(config: Config, warnings: Vec<String>) -> anyhow::Result<ExitCode> {
    telemetry::init(config.server.log_format);
    // Once, at start-up, where the operator's log collector sees them.
    for warning in warnings {
        tracing::warn!("{warning}");
    }
    let app = Application::build(config).await?;
    tracing::info!(addr = %app.local_addr(), "condense listening");
    app.run_until_stopped().await?;
    Ok(ExitCode::SUCCESS)
}
