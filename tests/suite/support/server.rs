//! Condense served for real on a free loopback port, for tests whose
//! clients are real programs (SDKs, a browser, raw sockets) rather than the
//! in-process router; and any other router (a provider, a stub) likewise.

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

/// Serves `app` on a free port of 127.0.0.1 until the test ends; the base
/// URL (`http://127.0.0.1:port`).
pub async fn serve_router(app: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

async fn build(config: condense::Config) -> condense::Application {
    let config = condense::Config {
        server: condense::config::ServerSettings {
            listen: "127.0.0.1:0".parse().unwrap(),
            ..config.server
        },
        ..config
    };
    condense::Application::build(config)
        .await
        .expect("condense starts")
}

/// One full response (head, and a `Content-Length` body or none) read from
/// a raw socket, within `limit`; panics if the server closes first or
/// takes longer (a bound for a failing run, not a measure).
pub async fn read_response(s: &mut tokio::net::TcpStream, limit: std::time::Duration) -> String {
    use tokio::io::AsyncReadExt;
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    tokio::time::timeout(limit, async {
        loop {
            let n = s.read(&mut buf).await.expect("reads");
            assert!(n > 0, "closed before a full response: {got:?}");
            got.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&got);
            if let Some(end) = text.find("\r\n\r\n") {
                let length: usize = text[..end]
                    .lines()
                    .find_map(|l| {
                        l.to_ascii_lowercase()
                            .strip_prefix("content-length:")
                            .map(|v| v.trim().parse().unwrap())
                    })
                    .unwrap_or(0);
                if got.len() >= end + 4 + length {
                    return;
                }
            }
        }
    })
    .await
    .expect("a response in time");
    String::from_utf8_lossy(&got).into_owned()
}

/// A provider at `/v1/messages` that holds each request until `release`
/// is notified, and says on `arrived` that one came in: a call in flight
/// for as long as a test needs it.
pub async fn held_provider() -> (
    String,
    std::sync::Arc<tokio::sync::Notify>,
    std::sync::Arc<tokio::sync::Notify>,
) {
    use std::sync::Arc;
    use tokio::sync::Notify;
    let (arrived, release) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
    let (a, r) = (arrived.clone(), release.clone());
    let app = axum::Router::new().route(
        "/v1/messages",
        axum::routing::post(move || {
            let (a, r) = (a.clone(), r.clone());
            async move {
                a.notify_one();
                r.notified().await;
                axum::Json(serde_json::json!({"type": "message", "content": []}))
            }
        }),
    );
    (serve_router(app).await, arrived, release)
}
