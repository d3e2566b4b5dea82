//! The upstream LLM path against stub servers: every fault ends with the
//! caller holding a valid thread (or a clear 502), never an error text as a
//! summary, and the API key never shows.

use serde_json::{Value, json};

use crate::support::common::{app_with, post, thread};
use crate::support::stub::{self, Fault};

const KEY: &str = "sk-test-SECRET-4242";

fn config(url: &str, anthropic: bool) -> condense::Config {
    condense::Config {
        upstream: condense::config::UpstreamSettings {
            url: Some(url.to_string()),
            kind: if anthropic {
                condense::upstream::Kind::Anthropic
            } else {
                condense::upstream::Kind::OpenAi
            },
            api_key: condense::upstream::Secret::new(KEY),
            model: "stub-model".into(),
            // Generous: a loaded machine must not turn a stub's prompt answer
            // into a timeout. A hang (which must time out) gets its own limit.
            timeout: std::time::Duration::from_secs(30),
            // Larger than every retry sequence here, so the attempts made are
            // max_retries + 1 exactly, never cut short by the budget.
            retry_budget: std::time::Duration::from_secs(300),
            max_retries: 2,
            ..Default::default()
        },
        ..Default::default()
    }
}

fn request(strategy: &str) -> Value {
    let t = thread("small-00.openai");
    json!({"messages": t["messages"], "tools": t["tools"], "model": "gpt-4o", "force": true, "summarizer": {"strategy": strategy}})
}

async fn compress_with(
    fault: Fault,
    anthropic: bool,
    body: Value,
) -> (stub::Stub, crate::support::common::Reply) {
    let s = stub::start(fault, anthropic).await;
    let mut c = config(&s.url, anthropic);
    if matches!(fault, Fault::Hang) {
        // The stub never answers in time: this timeout always fires.
        c.upstream.timeout = std::time::Duration::from_secs(2);
    }
    let r = post(&app_with(c), "/v1/compress", &body).await;
    (s, r)
}

fn assert_no_key(r: &crate::support::common::Reply) {
    assert!(
        !String::from_utf8_lossy(&r.bytes).contains(KEY),
        "the API key leaked: {}",
        r.text()
    );
}

#[tokio::test]
async fn an_llm_summary_reports_model_and_usage() {
    let (s, r) = compress_with(Fault::Ok, false, request("llm")).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let body = r.json();
    assert_eq!(body["summary"]["strategy"], "llm");
    assert_eq!(body["summary"]["model"], "stub-model");
    assert!(
        body["summary"]["content"]
            .as_str()
            .unwrap()
            .contains("stub summary")
    );
    assert_eq!(body["usage"]["prompt_tokens"], 321);
    assert_eq!(body["usage"]["completion_tokens"], 17);
    assert_eq!(body["degraded"], false);
    assert_eq!(s.calls(), 1);
    let h = &s.headers.lock().unwrap()[0];
    assert_eq!(h["authorization"], format!("Bearer {KEY}"));
    assert_no_key(&r);
}

#[tokio::test]
async fn the_anthropic_client_speaks_the_messages_api() {
    let (s, r) = compress_with(Fault::Ok, true, request("llm")).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let body = r.json();
    assert_eq!(body["summary"]["strategy"], "llm");
    assert_eq!(body["usage"]["prompt_tokens"], 321);
    let h = &s.headers.lock().unwrap()[0];
    assert_eq!(h["x-api-key"], KEY);
    assert_eq!(h["anthropic-version"], "2023-06-01");
}

#[tokio::test]
async fn hybrid_is_sections_then_narrative() {
    let (_, r) = compress_with(Fault::Ok, false, request("hybrid")).await;
    let content = r.json()["summary"]["content"].as_str().unwrap().to_string();
    let sections = content
        .find("### User requests")
        .expect("heuristic sections");
    let story = content.find("### Narrative\n").expect("narrative");
    assert!(
        sections < story && content.contains("stub summary"),
        "{content}"
    );
}

#[tokio::test]
async fn a_429_is_retried_after_its_retry_after() {
    let started = std::time::Instant::now();
    let (s, r) = compress_with(Fault::RateLimitedOnce, false, request("llm")).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["degraded"], false);
    assert_eq!(s.calls(), 2);
    assert!(
        started.elapsed() >= std::time::Duration::from_secs(1),
        "Retry-After: 1 was honoured"
    );
}

/// Every fault falls back to a heuristic summary flagged as degraded, with a
/// warning naming the failure, and no error text in the summary.
#[tokio::test]
async fn faults_fall_back_to_the_heuristic() {
    for (fault, retried) in [
        (Fault::ServerError, true),
        (Fault::Hang, true),
        (Fault::Garbage, false),
        (Fault::EmptyChoices, false),
        (Fault::EmptyText, false),
        (Fault::BadRequest, false),
        (Fault::EchoKey, false),
    ] {
        let (s, r) = compress_with(fault, false, request("llm")).await;
        assert_eq!(r.status, 200, "{fault:?}: {}", r.text());
        let body = r.json();
        assert_eq!(body["degraded"], true, "{fault:?}");
        assert_eq!(body["summary"]["strategy"], "heuristic", "{fault:?}");
        assert_eq!(
            body["usage"],
            Value::Null,
            "{fault:?}: a fallback reports no usage"
        );
        let content = body["summary"]["content"].as_str().unwrap();
        assert!(
            content.starts_with("### User requests"),
            "{fault:?}: no error text as a summary: {content}"
        );
        assert!(
            body["warnings"]
                .as_array()
                .unwrap()
                .iter()
                .any(|w| w.as_str().unwrap().contains("upstream LLM failed")),
            "{fault:?}"
        );
        assert!(
            body["messages"][1]["content"]
                .as_str()
                .unwrap()
                .starts_with("[Context Summary")
        );
        // Retryable faults (5xx, timeouts) are tried max_retries + 1 times.
        let expected_calls = if retried { 3 } else { 1 };
        assert_eq!(s.calls(), expected_calls, "{fault:?}");
        assert_no_key(&r);
    }
}

#[tokio::test]
async fn a_cut_connection_is_retried_then_falls_back() {
    let s = stub::start_cutter().await;
    let app = app_with(config(&s.url, false));
    let r = post(&app, "/v1/compress", &request("llm")).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["degraded"], true);
    assert_eq!(s.calls(), 3);
}

#[tokio::test]
async fn on_upstream_error_fail_answers_502_and_the_thread_is_not_lost() {
    let mut body = request("llm");
    body["config"] = json!({"on_upstream_error": "fail"});
    let (_, r) = compress_with(Fault::EchoKey, false, body).await;
    let p = r.problem(502);
    assert!(p["detail"].as_str().unwrap().contains("401"), "{p}");
    assert_no_key(&r);
}

#[tokio::test]
async fn ten_identical_requests_share_one_upstream_call() {
    let s = stub::start(Fault::SlowOk, false).await;
    let app = app_with(config(&s.url, false));
    let body = request("llm");
    let replies = futures_join(&app, &body, 10).await;
    for r in &replies {
        assert_eq!(r.status, 200);
    }
    let hashes: Vec<Value> = replies
        .iter()
        .map(|r| r.json()["summary"]["content_hash"].clone())
        .collect();
    assert!(hashes.windows(2).all(|w| w[0] == w[1]));
    assert_eq!(s.calls(), 1, "identical summaries in flight share one call");
}

async fn futures_join(
    app: &axum::Router,
    body: &Value,
    n: usize,
) -> Vec<crate::support::common::Reply> {
    let tasks: Vec<_> = (0..n)
        .map(|_| {
            let (app, body) = (app.clone(), body.clone());
            tokio::spawn(async move { post(&app, "/v1/compress", &body).await })
        })
        .collect();
    let mut out = Vec::new();
    for t in tasks {
        out.push(t.await.unwrap());
    }
    out
}

#[tokio::test]
async fn a_request_chooses_only_allowed_models() {
    let s = stub::start(Fault::Ok, false).await;
    let mut cfg = config(&s.url, false);
    cfg.upstream.allowed_models = vec!["bigger-model".into()];
    let app = app_with(cfg);
    let mut body = request("llm");
    body["summarizer"]["model"] = json!("bigger-model");
    let r = post(&app, "/v1/compress", &body).await;
    assert_eq!(r.json()["summary"]["model"], "bigger-model");
    body["summarizer"]["model"] = json!("gpt-5-pro");
    let r = post(&app, "/v1/compress", &body).await;
    assert_eq!(r.pointers(), ["/summarizer/model"]);
}

#[tokio::test]
async fn auto_uses_the_llm_only_for_spans_worth_it() {
    let (s, r) = compress_with(Fault::Ok, false, request("auto")).await;
    // small-00 has a span of several thousand tokens: above the default llm_min_tokens (4,000).
    assert_eq!(r.json()["summary"]["strategy"], "llm");
    assert_eq!(s.calls(), 1);
    let mut body = request("auto");
    body["config"] = json!({"llm_min_tokens": 1_000_000});
    let (s, r) = compress_with(Fault::Ok, false, body).await;
    assert_eq!(r.json()["summary"]["strategy"], "heuristic");
    assert_eq!(s.calls(), 0);
}

#[tokio::test]
async fn a_redirecting_upstream_is_not_followed_and_the_key_stays_home() {
    for anthropic in [true, false] {
        let elsewhere = stub::start(Fault::Ok, anthropic).await;
        let redirect = stub::start_redirect(&elsewhere.url).await;
        let mut body = request("llm");
        body["config"] = json!({"on_upstream_error": "fail"});
        let r = post(
            &app_with(config(&redirect.url, anthropic)),
            "/v1/compress",
            &body,
        )
        .await;
        let p = r.problem(502);
        assert!(p["detail"].as_str().unwrap().contains("307"), "{p}");
        assert_eq!(redirect.calls(), 1, "a 3xx is not retried");
        assert_eq!(
            elsewhere.calls(),
            0,
            "the redirect target got the request (and the key)"
        );
    }
}

#[tokio::test]
async fn credentials_in_the_upstream_url_never_reach_the_caller() {
    // The stub echoes the credentials it gets: here the Basic token made
    // from the URL's userinfo.
    let s = stub::start(Fault::EchoKey, false).await;
    let with_userinfo = s.url.replace("http://", "http://bob:hunter2@");
    let mut c = config(&with_userinfo, false);
    c.upstream.api_key = condense::upstream::Secret::default();
    let app = app_with(c);
    for on_error in ["fail", "fallback"] {
        let mut body = request("llm");
        body["config"] = json!({"on_upstream_error": on_error});
        let r = post(&app, "/v1/compress", &body).await;
        let text = r.text();
        for secret in ["hunter2", "Ym9iOmh1bnRlcjI=", "invalid credentials"] {
            assert!(!text.contains(secret), "{on_error}: `{secret}` in {text}");
        }
    }
    let sent = s.headers.lock().unwrap()[0]["authorization"].clone();
    assert_eq!(
        sent, "Basic Ym9iOmh1bnRlcjI=",
        "the userinfo is sent as Basic auth"
    );
}
