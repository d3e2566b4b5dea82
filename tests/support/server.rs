//! Condense served for real on a free loopback port, for tests whose
//! clients are real programs (SDKs, a browser, raw sockets) rather than the
//! in-process router.

/// Serves `config` on a free port of 127.0.0.1 (its `listen` is replaced)
/// until the test ends; the base URL.
pub async fn serve(config: condense::Config) -> String {
    let app = build(config).await;
    let url = format!("http://{}", app.local_addr());
    tokio::spawn(app.run_until_stopped());
    url
}

/// As [`serve`], until `stop` completes; the address, and the server's
/// task, which ends when every connection has closed.
#[allow(dead_code)]
pub async fn serve_until(
    config: condense::Config,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> (
    std::net::SocketAddr,
    tokio::task::JoinHandle<std::io::Result<()>>,
) {
    let app = build(config).await;
    let addr = app.local_addr();
    (addr, tokio::spawn(app.run_until(stop)))
}

async fn build(config: condense::Config) -> condense::Application {
    let config = condense::Config {
        listen: "127.0.0.1:0".parse().unwrap(),
        ..config
    };
    condense::Application::build(config)
        .await
        .expect("condense starts")
}
