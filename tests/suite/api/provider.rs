//! The `provider` summarizer: the summary of a Responses thread is the
//! provider's own compaction item from `POST {base}/responses/compact`,
//! against an in-process stub (a real provider's item is encrypted; the
//! stub's is opaque too). The item is asked without `instructions`, stands
//! where a summary stands, and the kept turns keep their reasoning
//! (OpenAI exempts its own compaction from its prefix rule).

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::routing::post as route;
use serde_json::{Value, json};

use crate::support::common::{app_with, post};
use crate::support::stub::{self, Fault};

/// The stub's item: opaque, as a real one is encrypted.
fn item() -> Value {
    json!({"type": "compaction", "id": "cmp_stub_1", "encrypted_content": "gAAAAB-opaque-stub-item=="})
}

/// A compaction endpoint that answers the stub's item (after the user
/// messages it keeps, as OpenAI's window does), recording each body; a body
/// with `instructions` is refused (OpenAI's guidance: compact without them).
async fn compactor() -> (String, Arc<Mutex<Vec<Value>>>) {
    let bodies = Arc::new(Mutex::new(Vec::new()));
    let seen = bodies.clone();
    let app = Router::new().route(
        "/responses/compact",
        route(move |axum::Json(body): axum::Json<Value>| {
            let seen = seen.clone();
            async move {
                seen.lock().unwrap().push(body.clone());
                if body.get("instructions").is_some() || body["input"].as_array().is_none() {
                    let bad = json!({"error": {"message": "compact without instructions"}});
                    return (axum::http::StatusCode::BAD_REQUEST, axum::Json(bad));
                }
                let kept = json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix it"}]});
                let answer = json!({"object": "response.compaction", "output": [kept, item()],
                    "usage": {"input_tokens": 900, "output_tokens": 40}});
                (axum::http::StatusCode::OK, axum::Json(answer))
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}"), bodies)
}

fn config(url: &str) -> condense::Config {
    condense::Config {
        upstream: condense::config::UpstreamSettings {
            url: Some(url.to_string()),
            model: "stub-model".into(),
            timeout: std::time::Duration::from_secs(30),
            retry_budget: std::time::Duration::from_secs(300),
            max_retries: 2,
            ..Default::default()
        },
        ..Default::default()
    }
}

/// A Codex-like Responses thread: each turn a request, reasoning, a call
/// and its output, reasoning again and an answer.
fn responses_thread(turns: usize) -> Value {
    let mut input = Vec::new();
    for k in 0..turns {
        let text = format!("Step {k}: fix the failing test in src/lib{k}.rs and run cargo test. ");
        input.push(json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text.repeat(8)}]}));
        input.push(json!({"type": "reasoning", "id": format!("rs_{k}a"), "summary": [], "encrypted_content": format!("gAAAA{k}a")}));
        input.push(json!({"type": "function_call", "id": format!("fc_{k}"), "call_id": format!("call_{k}"), "name": "shell", "arguments": json!({"command": format!("cargo test lib{k}")}).to_string()}));
        input.push(json!({"type": "function_call_output", "call_id": format!("call_{k}"), "output": format!("test lib{k} ... ok\n").repeat(30)}));
        input.push(json!({"type": "reasoning", "id": format!("rs_{k}b"), "summary": [], "encrypted_content": format!("gAAAA{k}b")}));
        input.push(json!({"type": "message", "id": format!("msg_{k}"), "role": "assistant", "content": [{"type": "output_text", "text": format!("Fixed lib{k}.")}]}));
    }
    json!({"model": "gpt-4o", "instructions": "You are a coding agent.", "input": input, "force": true})
}

fn with_strategy(mut body: Value, strategy: &str) -> Value {
    body["summarizer"] = json!({"strategy": strategy});
    body
}

fn reasoning(items: &[Value]) -> usize {
    items.iter().filter(|i| i["type"] == "reasoning").count()
}

#[tokio::test]
async fn the_summary_is_the_providers_item_and_kept_turns_keep_their_reasoning() {
    let (url, bodies) = compactor().await;
    let app = app_with(config(&url));
    let req = with_strategy(responses_thread(8), "provider");
    let r = post(&app, "/v1/compress", &req).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let body = r.json();
    assert_eq!(body["summary"]["strategy"], "provider");
    assert_eq!(body["summary"]["model"], "stub-model");
    assert_eq!(body["summary"]["fidelity"], Value::Null);
    assert_eq!(body["degraded"], false);
    assert_eq!(body["usage"]["prompt_tokens"], 900);
    let out = body["input"].as_array().unwrap();
    // The item stands where a summary stands, as the provider wrote it.
    assert_eq!(out[0], item(), "{body}");
    // Every kept turn keeps its reasoning, ids and all: nothing removed.
    let input = req["input"].as_array().unwrap();
    let tail = &out[1..];
    assert_eq!(tail, &input[input.len() - tail.len()..], "{body}");
    assert!(reasoning(tail) > 0, "{body}");
    assert!(
        body["applied_edits"]
            .as_array()
            .is_none_or(|e| e.is_empty()),
        "{body}"
    );
    let warnings = body["warnings"].to_string();
    assert!(warnings.contains("encrypted compaction item"), "{warnings}");
    // Asked without instructions, with the model and the span as items.
    let sent = bodies.lock().unwrap()[0].clone();
    assert_eq!(sent["model"], "stub-model");
    assert!(sent.get("instructions").is_none(), "{sent}");
    let span = sent["input"].as_array().unwrap();
    assert!(span.iter().any(|i| i["type"] == "function_call"), "{sent}");
    assert_eq!(reasoning(span), 0, "reasoning is not sent: {sent}");

    // A text summary of the same thread loses the kept turns' reasoning.
    let r = post(
        &app,
        "/v1/compress",
        &with_strategy(responses_thread(8), "heuristic"),
    )
    .await;
    let out = r.json()["input"].as_array().unwrap().clone();
    assert_eq!(reasoning(&out), 0, "{out:?}");
}

#[tokio::test]
async fn a_failing_compaction_falls_back_or_fails_as_on_upstream_error_says() {
    let s = stub::start_on(Fault::ServerError, false, "/responses/compact").await;
    let app = app_with(config(&s.url));
    let req = with_strategy(responses_thread(8), "provider");
    let r = post(&app, "/v1/compress", &req).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let body = r.json();
    assert_eq!(body["degraded"], true);
    assert_eq!(body["summary"]["strategy"], "heuristic");
    let first = body["input"][0]["content"].as_str().unwrap();
    assert!(first.starts_with("[Context Summary"), "{first}");
    // Retried as a completion is: max_retries + 1 attempts.
    assert_eq!(s.calls(), 3);

    let mut fail = req.clone();
    fail["config"] = json!({"on_upstream_error": "fail"});
    let p = post(&app, "/v1/compress", &fail).await.problem(502);
    assert!(p["detail"].as_str().unwrap().contains("500"), "{p}");
}

#[tokio::test]
async fn provider_is_refused_for_a_thread_that_is_not_responses() {
    let (url, bodies) = compactor().await;
    let app = app_with(config(&url));
    let messages: Vec<Value> = (0..30)
        .map(|i| json!({"role": if i % 2 == 0 {"user"} else {"assistant"}, "content": format!("message {i} ").repeat(20)}))
        .collect();
    let req = json!({"model": "gpt-4o", "messages": messages, "force": true, "summarizer": {"strategy": "provider"}});
    let r = post(&app, "/v1/compress", &req).await;
    assert_eq!(r.pointers(), ["/summarizer/strategy"], "{}", r.text());
    assert!(r.text().contains("Responses"), "{}", r.text());
    assert!(bodies.lock().unwrap().is_empty());

    // An Anthropic upstream has no `/responses/compact`.
    let mut anthropic = config(&url);
    anthropic.upstream.kind = condense::upstream::Kind::Anthropic;
    let req = with_strategy(responses_thread(8), "provider");
    let r = post(&app_with(anthropic), "/v1/compress", &req).await;
    let p = r.problem(422);
    assert!(
        p["detail"].as_str().unwrap().contains("OpenAI-compatible"),
        "{p}"
    );
    assert!(bodies.lock().unwrap().is_empty());
}

/// The item is cached like any summary: another replica on the same cache
/// answers it byte for byte without asking the provider again, and a text
/// summary of the same span never collides with it (the key names the writer).
#[tokio::test]
async fn the_item_is_reused_byte_for_byte_across_replicas() {
    let (url, bodies) = compactor().await;
    let dir = std::env::temp_dir().join(format!(
        "condense-provider-{}",
        uuid::Uuid::new_v4().simple()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let db = format!("sqlite://{}?mode=rwc", dir.join("cache.sqlite3").display());
    let (one, two) = (
        super::cache_e2e::app_on(&db, Some(&url)).await,
        super::cache_e2e::app_on(&db, Some(&url)).await,
    );
    let req = with_strategy(responses_thread(8), "provider");
    let first = post(&one, "/v1/compress", &req).await.json();
    let second = post(&two, "/v1/compress", &req).await.json();
    assert_eq!(first["summary"]["cached"], false, "{first}");
    assert_eq!(second["summary"]["cached"], true, "{second}");
    assert_eq!(first["input"], second["input"]);
    assert_eq!(second["input"][0], item());
    assert_eq!(bodies.lock().unwrap().len(), 1);
    let text = post(
        &two,
        "/v1/compress",
        &with_strategy(responses_thread(8), "heuristic"),
    )
    .await
    .json();
    assert_eq!(text["summary"]["strategy"], "heuristic");
    assert_eq!(text["summary"]["cached"], false, "{text}");
    assert_ne!(
        text["summary"]["content_hash"],
        first["summary"]["content_hash"]
    );
}

/// A profile's `strategy` chooses the writer when the request names none;
/// a request's explicit `summarizer.strategy` wins.
#[tokio::test]
async fn the_profiles_strategy_applies_unless_the_request_names_one() {
    let (url, bodies) = compactor().await;
    let app = app_with(config(&url));
    let mut req = responses_thread(8);
    req["config"] = json!({"strategy": "provider"});
    let r = post(&app, "/v1/compress", &req).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["summary"]["strategy"], "provider", "{}", r.text());
    assert_eq!(bodies.lock().unwrap().len(), 1);

    let r = post(&app, "/v1/compress", &with_strategy(req, "heuristic")).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["summary"]["strategy"], "heuristic", "{}", r.text());
    assert_eq!(bodies.lock().unwrap().len(), 1);

    // Null is no strategy: rejected, as before.
    let mut null = responses_thread(8);
    null["summarizer"] = json!({"strategy": null});
    let r = post(&app, "/v1/compress", &null).await;
    assert_eq!(r.pointers(), ["/summarizer/strategy"], "{}", r.text());
}
