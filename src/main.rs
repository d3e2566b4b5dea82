use clap::Parser;
use condense::{Application, Config, telemetry};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let config = Config::parse();
    telemetry::init(config.log_format);
    let app = Application::build(config).await?;
    tracing::info!(addr = %app.local_addr(), "condense listening");
    app.run_until_stopped().await?;
    Ok(())
}
