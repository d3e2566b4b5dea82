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
    match (&parsed.cli.command, &parsed.invalid) {
        (Some(Command::Config), _) => Ok(parsed.show()),
        (_, Some(line)) => Ok(cli::invalid(line)),
        (Some(Command::Healthcheck(check)), None) => Ok(check.run(&parsed.cli.config)),
        (None, None) => serve(parsed.cli.config),
    }
}

#[tokio::main]
async fn serve(config: Config) -> anyhow::Result<ExitCode> {
    telemetry::init(config.server.log_format);
    let app = Application::build(config).await?;
    tracing::info!(addr = %app.local_addr(), "condense listening");
    app.run_until_stopped().await?;
    Ok(ExitCode::SUCCESS)
}
