//! The upstream's credentials (its API key, and a user and password in its
//! URL) never reach the logs, even when the upstream echoes them back in an
//! error body, nor `--help`.
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
const PASSWORD: &str = "hunter2-SECRET";
/// base64("bob:hunter2-SECRET"): what reqwest sends for that userinfo.
const BASIC: &str = "Ym9iOmh1bnRlcjItU0VDUkVU";

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

    for (fault, userinfo) in [
        (Fault::EchoKey, false),
        (Fault::ServerError, false),
        (Fault::EchoKey, true),
    ] {
        let s = stub::start(fault, false).await;
        let (url, key) = if userinfo {
            // No key: the stub echoes the Basic token of the userinfo.
            (
                s.url.replace("http://", &format!("http://bob:{PASSWORD}@")),
                "",
            )
        } else {
            (s.url.clone(), KEY)
        };
        let app = condense::http::router(
            condense::AppState::new(condense::Config {
                upstream_url: Some(url),
                upstream_api_key: condense::upstream::Secret::new(key),
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
        for secret in [KEY, PASSWORD, BASIC] {
            assert!(
                !text.contains(secret),
                "`{secret}` is in the answer: {text}"
            );
        }
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
    for secret in [KEY, PASSWORD, BASIC] {
        assert!(!logs.contains(secret), "`{secret}` is in the logs: {logs}");
    }
}

#[test]
fn help_shows_no_configured_secret() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_condense"))
        .arg("--help")
        .env(
            "CONDENSE_UPSTREAM_URL",
            format!("http://bob:{PASSWORD}@llm.internal/v1"),
        )
        .env("CONDENSE_UPSTREAM_API_KEY", KEY)
        .env(
            "CONDENSE_PROXY_OPENAI_URL",
            format!("https://bob:{PASSWORD}@a.internal/v1"),
        )
        .env(
            "CONDENSE_PROXY_ANTHROPIC_URL",
            format!("https://bob:{PASSWORD}@b.internal"),
        )
        .env("CONDENSE_PROXY_API_KEY", KEY)
        .env(
            "CONDENSE_DATABASE_URL",
            format!("postgres://bob:{PASSWORD}@db/condense"),
        )
        .output()
        .expect("the binary runs");
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("CONDENSE_UPSTREAM_URL"), "{help}");
    for secret in [KEY, PASSWORD, "bob"] {
        assert!(!help.contains(secret), "`{secret}` in --help:\n{help}");
    }
}
