//! The upstream's API key never reaches the logs, even when the upstream
//! echoes it back in an error body.
//!
//! A binary of its own with a global subscriber: a thread-local one
//! (`set_default`) misses events whose callsite another test thread
//! registered first, which made this check fail at random.

#[allow(dead_code)]
#[path = "api/stub.rs"]
mod stub;

use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::http::{Request, header};
use http_body_util::BodyExt;
use serde_json::json;
use tower::ServiceExt;

use stub::Fault;

const KEY: &str = "sk-test-SECRET-4242";

#[derive(Clone, Default)]
struct Buf(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Buf {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn the_api_key_never_reaches_the_logs() {
    let buf = Buf::default();
    let writer = buf.clone();
    tracing::subscriber::set_global_default(
        tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .finish(),
    )
    .expect("the only subscriber of this binary");

    for fault in [Fault::EchoKey, Fault::ServerError] {
        let s = stub::start(fault, false).await;
        let app = condense::http::router(
            condense::AppState::new(condense::Config {
                upstream_url: Some(s.url.clone()),
                upstream_api_key: condense::upstream::Secret::new(KEY),
                upstream_model: "stub-model".into(),
                upstream_timeout: 30,
                upstream_retry_budget: 300,
                upstream_max_retries: 2,
                ..Default::default()
            })
            .unwrap(),
        );
        let messages: Vec<_> = (0..12)
            .map(|i| json!({"role": if i % 2 == 0 { "user" } else { "assistant" }, "content": format!("message {i}")}))
            .collect();
        let body = json!({"messages": messages, "force": true, "summarizer": {"strategy": "llm"}});
        let req = Request::post("/v1/compress")
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(serde_json::to_vec(&body).unwrap()))
            .unwrap();
        let res = app.oneshot(req).await.unwrap();
        assert_eq!(res.status(), 200, "{fault:?}");
        let bytes = res.into_body().collect().await.unwrap().to_bytes();
        let text = String::from_utf8_lossy(&bytes);
        assert!(text.contains("\"degraded\":true"), "{fault:?}: {text}");
        assert!(!text.contains(KEY), "the API key is in the answer: {text}");
    }
    let logs = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
    assert!(
        logs.contains("upstream summary failed"),
        "the failures were logged: {logs}"
    );
    assert!(
        logs.contains("[redacted]"),
        "the echoed key was scrubbed, not dropped: {logs}"
    );
    assert!(!logs.contains(KEY), "the API key is in the logs");
}
