//! The `provider` summarizer on the proxy (a profile's `strategy`): a
//! Responses conversation's summary is its own provider's compaction item,
//! asked with the client's credentials and model (no upstream configured,
//! or one that is never asked), reused byte for byte on the next turn, and
//! the kept turns keep their reasoning. A thread in another format goes per
//! `on_upstream_error`, never an error. A client's own compaction
//! (`/v1/responses/compact`) goes to its provider as it came.
use crate::support::server;

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Request, StatusCode, header};
use axum::routing::post;
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tower::ServiceExt;

/// What one stub route received: headers and body of each request.
type Seen = Arc<Mutex<Vec<(HeaderMap, Value)>>>;

/// The stub's item: opaque, as a real one is encrypted.
fn item() -> Value {
    json!({"type": "compaction", "id": "cmp_proxy_1", "encrypted_content": "gAAAAB-opaque-proxy-item=="})
}

/// A provider with `/v1/responses` (answers a fixed response) and
/// `/v1/responses/compact` (answers the stub's item), recording both.
async fn provider() -> (String, Seen, Seen) {
    let (turns, compactions) = (Seen::default(), Seen::default());
    let (t, c) = (turns.clone(), compactions.clone());
    let app = Router::new()
        .route(
            "/v1/responses",
            post(move |h: HeaderMap, b: Bytes| {
                let t = t.clone();
                async move {
                    t.lock()
                        .unwrap()
                        .push((h, serde_json::from_slice(&b).unwrap()));
                    axum::Json(json!({"id": "resp_1", "output": []}))
                }
            }),
        )
        .route(
            "/v1/responses/compact",
            post(move |h: HeaderMap, b: Bytes| {
                let c = c.clone();
                async move {
                    c.lock()
                        .unwrap()
                        .push((h, serde_json::from_slice(&b).unwrap()));
                    axum::Json(json!({"object": "response.compaction", "output": [item()],
                        "usage": {"input_tokens": 900, "output_tokens": 40}}))
                }
            }),
        );
    (server::serve_router(app).await, turns, compactions)
}

/// condense with the proxy on `url`, a cache in `dir` (continuity finds
/// the summary there) and a profile `codex` whose summaries are the
/// provider's own; with `upstream`, an upstream configured with the
/// operator's key too (never asked, its key never sent to the
/// conversation's provider), else none.
async fn condense(url: &str, dir: &std::path::Path) -> Router {
    condense_with(url, dir, false).await
}

async fn condense_with(url: &str, dir: &std::path::Path, upstream: bool) -> Router {
    let file = dir.join("profiles.toml");
    std::fs::write(
        &file,
        "[profiles.codex]\nstrategy = \"provider\"\nmax_messages_before_summary = 20\nmax_payback_turns = 1000000\nprecompute_at = 0.0\n\n[profiles.strict]\nstrategy = \"provider\"\non_upstream_error = \"fail\"\nmax_messages_before_summary = 20\nmax_payback_turns = 1000000\n",
    )
    .unwrap();
    let mut config = condense::Config {
        proxy: condense::config::ProxySettings {
            openai_url: Some(format!("{url}/v1")),
            ..Default::default()
        },
        upstream: match upstream {
            true => condense::config::UpstreamSettings {
                url: Some(format!("{url}/operator")),
                model: "operator-model".into(),
                api_key: condense::upstream::Secret::new("sk-operator"),
                ..Default::default()
            },
            false => Default::default(),
        },
        // Its own file, named: an unset URL would take `DATABASE_URL` (the
        // full tier's shared database), where the second round would find
        // the first round's item and ask the provider for none.
        cache: condense::config::CacheSettings {
            database_url: Some(format!(
                "sqlite://{}?mode=rwc",
                dir.join("cache.sqlite3").display()
            )),
            ..Default::default()
        },
        ..Default::default()
    };
    config.models.profiles_file = Some(file);
    let state = condense::AppState::connect(config).await;
    condense::http::router(state.expect("state builds"))
}

async fn send(app: &Router, path: &str, body: &Value) -> (StatusCode, HeaderMap) {
    send_as(app, "codex", path, body).await
}

async fn send_as(app: &Router, profile: &str, path: &str, body: &Value) -> (StatusCode, HeaderMap) {
    let req = Request::post(path)
        .header(header::CONTENT_TYPE, "application/json")
        .header("authorization", "Bearer sk-client")
        .header("x-condense-profile", profile)
        .body(Body::from(serde_json::to_vec(body).unwrap()))
        .unwrap();
    let res = app.clone().oneshot(req).await.unwrap();
    let (status, headers) = (res.status(), res.headers().clone());
    res.into_body().collect().await.unwrap();
    (status, headers)
}

/// A Codex-like turn: a request, reasoning, a call and its output,
/// reasoning again and an answer.
fn turn(k: usize) -> Vec<Value> {
    let text = format!("Step {k}: fix the failing test in src/lib{k}.rs and run cargo test. ");
    vec![
        json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text.repeat(8)}]}),
        json!({"type": "reasoning", "id": format!("rs_{k}a"), "summary": [], "encrypted_content": format!("gAAAA{k}a")}),
        json!({"type": "function_call", "id": format!("fc_{k}"), "call_id": format!("call_{k}"), "name": "shell", "arguments": json!({"command": format!("cargo test lib{k}")}).to_string()}),
        json!({"type": "function_call_output", "call_id": format!("call_{k}"), "output": format!("test lib{k} ... ok\n").repeat(30)}),
        json!({"type": "reasoning", "id": format!("rs_{k}b"), "summary": [], "encrypted_content": format!("gAAAA{k}b")}),
        json!({"type": "message", "id": format!("msg_{k}"), "role": "assistant", "content": [{"type": "output_text", "text": format!("Fixed lib{k}.")}]}),
    ]
}

fn responses(turns: std::ops::Range<usize>) -> Value {
    let input: Vec<Value> = turns.flat_map(turn).collect();
    json!({"model": "gpt-5-codex", "instructions": "You are a coding agent.", "input": input})
}

fn last(seen: &Seen) -> (HeaderMap, Value) {
    seen.lock().unwrap().last().cloned().expect("a request")
}

fn header<'h>(h: &'h HeaderMap, name: &str) -> &'h str {
    h.get(name).map_or("", |v| v.to_str().unwrap())
}

#[tokio::test]
async fn the_conversations_provider_compacts_it_and_the_item_stays_byte_for_byte() {
    // The same with no upstream configured and with one (never asked).
    for upstream in [false, true] {
        compacts_and_reuses(upstream).await;
    }
}

async fn compacts_and_reuses(upstream: bool) {
    let (url, turns, compactions) = provider().await;
    let dir = tempfile::tempdir().unwrap();
    let app = condense_with(&url, dir.path(), upstream).await;

    let first = responses(0..8);
    let (status, h) = send(&app, "/v1/responses", &first).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(header(&h, "x-condense-compressed"), "true", "{h:?}");
    // Asked of the conversation's provider, with the client's key and model.
    assert_eq!(compactions.lock().unwrap().len(), 1, "upstream: {upstream}");
    let (ch, cb) = last(&compactions);
    assert_eq!(header(&ch, "authorization"), "Bearer sk-client");
    assert_eq!(cb["model"], "gpt-5-codex");
    assert!(cb.get("instructions").is_none(), "{cb}");
    // The item stands first, and every kept item follows as sent,
    // reasoning included: nothing removed, nothing reported removed.
    let (th, sent) = last(&turns);
    assert_eq!(header(&th, "authorization"), "Bearer sk-client");
    let items = sent["input"].as_array().unwrap();
    assert_eq!(items[0], item(), "{sent}");
    let input = first["input"].as_array().unwrap();
    let tail = &items[1..];
    assert_eq!(tail, &input[input.len() - tail.len()..]);
    assert!(tail.iter().any(|i| i["type"] == "reasoning"), "{sent}");
    assert_eq!(header(&h, "x-condense-thinking"), "");

    // The next turn: the whole history again and one more turn. The item
    // goes again byte for byte, without asking the provider again.
    let next = responses(0..9);
    let (status, h) = send(&app, "/v1/responses", &next).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(header(&h, "x-condense-prefix-reused"), "true", "{h:?}");
    assert_eq!(compactions.lock().unwrap().len(), 1);
    let (_, sent) = last(&turns);
    assert_eq!(sent["input"][0], item(), "{sent}");
    let items = sent["input"].as_array().unwrap();
    assert!(items[1..].starts_with(tail), "the kept items stay too");
}

#[tokio::test]
async fn a_thread_not_in_the_responses_format_falls_back_with_a_note() {
    let (url, _, compactions) = provider().await;
    let dir = tempfile::tempdir().unwrap();
    let app = condense(&url, dir.path()).await;
    let messages: Vec<Value> = (0..30)
        .map(|i| json!({"role": if i % 2 == 0 {"user"} else {"assistant"}, "content": format!("message {i} about src/m{i}.rs ").repeat(10)}))
        .collect();
    let body = json!({"model": "gpt-4o", "messages": messages});
    let (status, h) = send(&app, "/v1/chat/completions", &body).await;
    // The chat route answers what the stub has not (404): as it came.
    assert_ne!(status, StatusCode::INTERNAL_SERVER_ERROR);
    let note = header(&h, "x-condense-note");
    assert!(note.contains("needs a Responses thread"), "{h:?}");
    assert_eq!(header(&h, "x-condense-compressed"), "true", "{h:?}");
    assert!(compactions.lock().unwrap().is_empty());

    // Under `on_upstream_error: fail` it goes as it came, with the note.
    let (status, h) = send_as(&app, "strict", "/v1/chat/completions", &body).await;
    assert_ne!(status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(header(&h, "x-condense-compressed"), "false", "{h:?}");
    let note = header(&h, "x-condense-note");
    assert!(note.contains("needs a Responses thread"), "{h:?}");
    assert!(compactions.lock().unwrap().is_empty());
}

/// A client's own compaction (OpenAI's `/responses/compact`, e.g. the SDK's
/// `client.responses.compact`) reaches its provider as it came, even when a
/// summary would be due: condense writes none first (two compactions would
/// stack), and the provider's item comes back unchanged.
#[tokio::test]
async fn a_clients_own_compaction_goes_as_it_came() {
    let (url, turns, compactions) = provider().await;
    let dir = tempfile::tempdir().unwrap();
    let app = condense(&url, dir.path()).await;
    let body = responses(0..8);
    let sent = serde_json::to_vec(&body).unwrap();
    for profile in [None, Some("codex")] {
        let mut req = Request::post("/v1/responses/compact")
            .header(header::CONTENT_TYPE, "application/json")
            .header("authorization", "Bearer sk-client");
        if let Some(p) = profile {
            req = req.header("x-condense-profile", p);
        }
        let res = app
            .clone()
            .oneshot(req.body(Body::from(sent.clone())).unwrap())
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::OK, "{profile:?}");
        let h = res.headers().clone();
        assert_eq!(header(&h, "x-condense-compressed"), "false", "{h:?}");
        assert!(
            header(&h, "x-condense-note").contains("compacts this thread itself"),
            "{h:?}"
        );
        let answer: Value =
            serde_json::from_slice(&res.into_body().collect().await.unwrap().to_bytes()).unwrap();
        assert_eq!(
            answer["output"][0],
            item(),
            "relayed as the provider wrote it"
        );
        let (ch, cb) = last(&compactions);
        assert_eq!(header(&ch, "authorization"), "Bearer sk-client");
        assert_eq!(cb, body, "{profile:?}: forwarded as it came");
    }
    // One request each, the client's: condense compacted nothing itself.
    assert_eq!(compactions.lock().unwrap().len(), 2);
    assert!(turns.lock().unwrap().is_empty());
    // Its bill is counted; going as it came is no problem of condense's.
    let req = Request::get("/metrics").body(Body::empty()).unwrap();
    let text = app.oneshot(req).await.unwrap().into_body().collect().await;
    let text = text.unwrap().to_bytes();
    let metrics = crate::support::prometheus::parse(std::str::from_utf8(&text).unwrap());
    let billed = |kind| {
        let labels = [("provider", "responses"), ("kind", kind)];
        metrics.value("condense_provider_tokens_total", &labels)
    };
    assert_eq!((billed("input"), billed("output")), (1800.0, 80.0));
    let unchanged = "condense_proxy_unchanged_requests_total";
    assert_eq!(metrics.matching(unchanged, &[]).count(), 0);
}

/// The official `openai` SDK's `client.responses.compact` through the
/// proxy: the SDK gets its provider's compaction item, and the provider the
/// SDK's input as it was sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openai_sdk_compacts_through_the_proxy() {
    if crate::proxy_sdk::sdks("the_openai_sdk_compacts_through_the_proxy").is_none() {
        return;
    }
    let (url, _, compactions) = provider().await;
    let dir = tempfile::tempdir().unwrap();
    let app = condense(&url, dir.path()).await;
    let base = server::serve_router(app).await;
    let script = r#"
import json, sys
from openai import OpenAI
client = OpenAI(base_url=sys.argv[1] + "/v1", api_key="sk-client")
out = client.responses.compact(model="gpt-5.1-codex", input=[
    {"role": "user", "content": "fix the failing test"},
    {"type": "function_call", "call_id": "call_1", "name": "shell", "arguments": "{}"},
    {"type": "function_call_output", "call_id": "call_1", "output": "ok"},
])
print(json.dumps(out.model_dump()))
"#;
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new("python3")
            .args(["-c", script, &base])
            .output()
            .expect("python3 runs")
    })
    .await
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        answer["output"][0]["encrypted_content"],
        item()["encrypted_content"]
    );
    let (ch, cb) = last(&compactions);
    assert_eq!(header(&ch, "authorization"), "Bearer sk-client");
    assert_eq!(cb["model"], "gpt-5.1-codex");
    assert_eq!(cb["input"].as_array().unwrap().len(), 3, "{cb}");
    assert_eq!(compactions.lock().unwrap().len(), 1);
}
