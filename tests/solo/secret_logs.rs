//! The upstream's credentials (its API key, and a user and password in its
//! URL) never reach the logs, even when the upstream echoes them back in an
//! error body, nor `--help`; nor do condense's own API keys, right or wrong,
//! in logs, answers, errors or the configuration's Debug.
//!
//! In `tests/solo/` for its global subscriber: a thread-local one
//! (`set_default`) misses events whose callsite another test thread
//! registered first, which made this check fail at random.

use std::sync::{Arc, Mutex, OnceLock};

use axum::body::Body;
use axum::http::{Request, header};
use http_body_util::BodyExt;
use serde_json::json;
use tower::ServiceExt;

use crate::stub::{self, Fault};

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

/// The log of this binary: one global subscriber, installed once.
fn logs() -> &'static Buf {
    static LOGS: OnceLock<Buf> = OnceLock::new();
    LOGS.get_or_init(|| {
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
        buf
    })
}

impl Buf {
    fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

#[tokio::test]
async fn the_api_key_never_reaches_the_logs() {
    let _process = crate::shared().await;
    let buf = logs();

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
                upstream: condense::config::UpstreamSettings {
                    url: Some(url),
                    api_key: condense::upstream::Secret::new(key),
                    model: "stub-model".into(),
                    timeout: std::time::Duration::from_secs(30),
                    retry_budget: std::time::Duration::from_secs(300),
                    max_retries: 2,
                    ..Default::default()
                },
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
    let logs = buf.text();
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

/// A provider-exact count (`count: "provider"`) whose endpoint echoes the
/// counting key in a 401: neither the answer nor the logs carry it.
#[tokio::test]
async fn the_count_key_never_leaves_a_provider_count() {
    let _process = crate::shared().await;
    let buf = logs();
    let s = stub::start_on(Fault::EchoKey, true, "/v1/messages/count_tokens").await;
    let app = condense::http::router(
        condense::AppState::new(condense::Config {
            count: condense::config::CountSettings {
                anthropic_url: Some(s.url.clone()),
                api_key: condense::upstream::Secret::new(KEY),
                ..Default::default()
            },
            ..Default::default()
        })
        .unwrap(),
    );
    let body = json!({"count": "provider", "system": "Be brief.",
                      "messages": [{"role": "user", "content": "hi"}]});
    let req = Request::post("/v1/tokens")
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(serde_json::to_vec(&body).unwrap()))
        .unwrap();
    let res = app.oneshot(req).await.unwrap();
    assert_eq!(res.status(), 200);
    let bytes = res.into_body().collect().await.unwrap().to_bytes();
    let text = String::from_utf8_lossy(&bytes);
    assert!(text.contains("HTTP 401"), "{text}");
    assert_eq!(s.calls(), 1, "the provider was asked");
    assert!(!text.contains(KEY), "the key is in the answer: {text}");
    let logs = buf.text();
    assert!(
        logs.contains("a provider count failed"),
        "the failure was logged: {logs}"
    );
    assert!(!logs.contains(KEY), "the key is in the logs: {logs}");
}

/// A request the proxy forwards unchanged because of a problem (here a
/// thread condense cannot read) is logged at WARN with its request id and
/// the reason; the client's provider key is not logged.
#[tokio::test]
async fn a_request_forwarded_unchanged_is_logged_with_its_request_id() {
    let _process = crate::shared().await;
    let buf = logs();
    let s = stub::start(Fault::Ok, false).await;
    let app = condense::http::router(
        condense::AppState::new(condense::Config {
            proxy: condense::config::ProxySettings {
                openai_url: Some(s.url.clone()),
                ..Default::default()
            },
            ..Default::default()
        })
        .unwrap(),
    );
    let orphan = json!({"model": "gpt-4o",
                        "messages": [{"role": "tool", "tool_call_id": "nope", "content": "x"}]});
    let req = Request::post("/v1/chat/completions")
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::AUTHORIZATION, format!("Bearer {KEY}"))
        .header("x-request-id", "req-unchanged-4242")
        .body(Body::from(serde_json::to_vec(&orphan).unwrap()))
        .unwrap();
    let res = app.oneshot(req).await.unwrap();
    assert_eq!(res.status(), 200);
    assert!(res.headers().contains_key("x-condense-note"));
    assert_eq!(s.calls(), 1, "forwarded");
    let logs = buf.text();
    let line = logs
        .lines()
        .find(|l| l.contains("forwarded unchanged") && l.contains("req-unchanged-4242"))
        .unwrap_or_else(|| panic!("no line with the request id: {logs}"));
    assert!(line.contains("WARN"), "{line}");
    // In the event's own fields, not only in the request's span: a JSON log
    // has it at the top level.
    assert!(line.contains("request_id=\"req-unchanged-4242\""), "{line}");
    assert!(line.contains("reason=\"unreadable\""), "{line}");
    assert!(!logs.contains(KEY), "the key is in the logs: {logs}");
}

#[test]
fn help_shows_no_configured_secret() {
    let _process = crate::shared_blocking();
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
            "CONDENSE_COUNT_ANTHROPIC_URL",
            format!("https://bob:{PASSWORD}@c.internal"),
        )
        .env("CONDENSE_COUNT_API_KEY", KEY)
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

/// Condense's own keys: one from the environment, one from the file, and
/// what callers present, right or wrong.
const ENV_KEY: &str = "condense-env-key-SECRET-7a7a";
const FILE_KEY: &str = "condense-file-key-SECRET-8b8b";
const WRONG_KEY: &str = "condense-wrong-key-SECRET-9c9c";
const BAD_LINE_KEY: &str = "SECRET-short";

#[tokio::test]
async fn condense_api_keys_never_reach_logs_answers_or_errors() {
    let _process = crate::shared().await;
    let buf = logs();
    let file =
        std::env::temp_dir().join(format!("condense-keys-{}", uuid::Uuid::new_v4().simple()));
    std::fs::write(&file, format!("{FILE_KEY} llm\n")).unwrap();
    let provider = stub::start(Fault::EchoKey, false).await;
    let config = condense::Config {
        access: condense::config::AccessSettings {
            api_keys: vec![condense::upstream::Secret::new(ENV_KEY)],
            api_keys_file: Some(file.clone()),
            rate_limit_per_sec: 0.001,
            rate_limit_burst: 2,
            ..Default::default()
        },
        proxy: condense::config::ProxySettings {
            openai_url: Some(provider.url.clone()),
            ..Default::default()
        },
        ..Default::default()
    };
    let debug = format!("{config:?}");
    let state = condense::AppState::new(config).unwrap();
    let app = condense::http::router(state.clone());

    let mut answers = vec![debug];
    let body = json!({"text": "hello"});
    for auth in [
        format!("Bearer {ENV_KEY}"),
        format!("Bearer {FILE_KEY}"),
        format!("Bearer {WRONG_KEY}"),
        WRONG_KEY.to_string(),
        format!("Bearer {ENV_KEY}"),
        format!("Bearer {ENV_KEY}"),
    ] {
        let req = Request::post("/v1/tokens")
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::AUTHORIZATION, auth)
            .body(Body::from(serde_json::to_vec(&body).unwrap()))
            .unwrap();
        let res = app.clone().oneshot(req).await.unwrap();
        answers.push(format!("{:?}", res.headers()));
        let bytes = res.into_body().collect().await.unwrap().to_bytes();
        answers.push(String::from_utf8_lossy(&bytes).into_owned());
    }
    // The proxy: the condense key in its header is neither logged nor forwarded.
    let req = Request::post("/v1/chat/completions")
        .header(header::CONTENT_TYPE, "application/json")
        .header("x-condense-api-key", FILE_KEY)
        .body(Body::from(
            r#"{"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}"#,
        ))
        .unwrap();
    let res = app.clone().oneshot(req).await.unwrap();
    let bytes = res.into_body().collect().await.unwrap().to_bytes();
    answers.push(String::from_utf8_lossy(&bytes).into_owned());

    // A reload that fails on a line holding a key, and one that works.
    std::fs::write(&file, format!("{FILE_KEY}\n{BAD_LINE_KEY}\n")).unwrap();
    assert_eq!(state.access.reload(), condense::guard::Reload::Refused);
    std::fs::write(&file, format!("{WRONG_KEY} {FILE_KEY}\n")).unwrap();
    assert_eq!(state.access.reload(), condense::guard::Reload::Refused);
    std::fs::write(&file, format!("{FILE_KEY}\n")).unwrap();
    assert_eq!(state.access.reload(), condense::guard::Reload::Loaded(2));
    // A start refused for a bad line.
    std::fs::write(&file, format!("{BAD_LINE_KEY}\n")).unwrap();
    let refused = condense::AppState::new(condense::Config {
        access: condense::config::AccessSettings {
            api_keys_file: Some(file.clone()),
            ..Default::default()
        },
        ..Default::default()
    })
    .err()
    .expect("a short key stops the start");
    answers.push(format!("{refused:#} {refused:?}"));
    let refused = condense::AppState::new(condense::Config {
        access: condense::config::AccessSettings {
            api_keys: vec![condense::upstream::Secret::new(BAD_LINE_KEY)],
            ..Default::default()
        },
        ..Default::default()
    })
    .err()
    .expect("a short key stops the start");
    answers.push(format!("{refused:#} {refused:?}"));
    std::fs::remove_file(&file).unwrap();

    let logs = buf.text();
    assert!(logs.contains("API keys reloaded"), "{logs}");
    assert!(logs.contains("was not reloaded"), "{logs}");
    let all = answers.join("\n");
    assert!(
        all.contains("unauthorized") && all.contains("rate-limited"),
        "{all}"
    );
    assert!(provider.calls() == 1, "the proxied request went through");
    for key in [ENV_KEY, FILE_KEY, WRONG_KEY, BAD_LINE_KEY] {
        assert!(!logs.contains(key), "{key} is in the logs");
        assert!(
            !all.contains(key),
            "{key} is in an answer or an error: {all}"
        );
    }
    // The provider echoes what it got: no condense key among it.
    let seen = format!("{:?}", provider.headers.lock().unwrap());
    assert!(!seen.contains(FILE_KEY), "{seen}");
}

#[test]
fn an_open_relay_is_one_warning_at_start() {
    let _process = crate::shared_blocking();
    let buf = logs();
    let open = condense::guard::Access::open();
    open.warn_if_open(false, false);
    assert!(!buf.text().contains("open relay") && !buf.text().contains("operator's credentials"));
    open.warn_if_open(true, false);
    let logs = buf.text();
    assert!(
        logs.contains("an upstream LLM is configured and no API keys are"),
        "{logs}"
    );
    assert!(logs.contains("CONDENSE_API_KEYS"), "{logs}");
    let keyed = condense::guard::Access::new(condense::guard::AccessConfig {
        keys: vec![condense::upstream::Secret::new(ENV_KEY)],
        ..Default::default()
    })
    .unwrap();
    let before = buf.text().matches("no API keys are").count();
    keyed.warn_if_open(true, true);
    assert_eq!(buf.text().matches("no API keys are").count(), before);
}
