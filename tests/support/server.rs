//! Condense served for real on a free loopback port, for tests whose
//! clients are real programs (SDKs, a browser) rather than the in-process
//! router.

/// Serves `config` on a free port of 127.0.0.1 (its `listen` is replaced)
/// until the test ends; the base URL.
pub async fn serve(config: condense::Config) -> String {
    let config = condense::Config {
        listen: "127.0.0.1:0".parse().unwrap(),
        ..config
    };
    let app = condense::Application::build(config)
        .await
        .expect("condense starts");
    let url = format!("http://{}", app.local_addr());
    tokio::spawn(app.run_until_stopped());
    url
}
