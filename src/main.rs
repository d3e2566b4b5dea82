use std::process::ExitCode;

use clap::Parser;
use condense::cli::{Cli, Command};
use condense::{Application, Config, telemetry};

fn main() -> anyhow::Result<ExitCode> {
    let cli = Cli::parse();
    match cli.command {
        Some(Command::Healthcheck(check)) => Ok(check.run(&cli.config)),
        None => serve(cli.config),
    }
}

#[tokio::main]
async fn serve(config: Config) -> anyhow::Result<ExitCode> {
    telemetry::init(config.log_format);
    let app = Application::build(config).await?;
    tracing::info!(addr = %app.local_addr(), "condense listening");
    app.run_until_stopped().await?;
    Ok(ExitCode::SUCCESS)
}
