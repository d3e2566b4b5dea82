//! The upstream LLM's happy paths against a real model, for both client
//! kinds: llama.cpp's `llama-server` (SmolLM2-135M, started by
//! `scripts/local-llm.sh`) speaks OpenAI Chat Completions at `/v1` and
//! Anthropic Messages at `/v1/messages`. A recording relay in front of it
//! shows how many calls each summary took. The model is tiny: these judge
//! the mechanics (who wrote it, usage, chunking, single flight, a valid
//! thread back), never the prose.
use crate::support::live;
use crate::support::recorder::Recorder;

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tower::ServiceExt;

use condense::upstream::Kind;

/// Condense with the real model behind a recording relay, as `kind` speaks.
async fn condense(test: &str, kind: Kind) -> Option<(Router, Recorder)> {
    let url = live::llm(test)?;
    let proxy = Recorder::start(&live::origin(&url)).await;
    let upstream_url = match kind {
        Kind::OpenAi => format!("{}/v1", proxy.url),
        Kind::Anthropic => proxy.url.clone(),
    };
    let config = condense::Config {
        limits: condense::config::LimitSettings {
            request_timeout: std::time::Duration::from_secs(1800),
            ..Default::default()
        },
        upstream: condense::config::UpstreamSettings {
            url: Some(upstream_url),
            kind,
            model: "SmolLM2-135M-Instruct".into(),
            // The model's window: longer spans are chunked.
            context_window: 8192,
            timeout: std::time::Duration::from_secs(600),
            retry_budget: std::time::Duration::from_secs(1200),
            ..Default::default()
        },
        ..Default::default()
    };
    let app = condense::http::router(condense::AppState::new(config).expect("state builds"));
    Some((app, proxy))
}

async fn post(app: &Router, path: &str, body: &Value) -> (StatusCode, Value) {
    let req = Request::post(path)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(serde_json::to_vec(body).unwrap()))
        .unwrap();
    let res = app.clone().oneshot(req).await.unwrap();
    let status = res.status();
    let bytes = res.into_body().collect().await.unwrap().to_bytes();
    (status, serde_json::from_slice(&bytes).unwrap())
}

fn fixture(name: &str) -> Value {
    let path = format!("{}/data/threads/{name}.json", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn request(thread: &str, strategy: &str, config: Value) -> Value {
    let t = fixture(thread);
    json!({"messages": t["messages"], "tools": t["tools"], "model": t["model"], "force": true,
           "summarizer": {"strategy": strategy}, "config": config})
}

/// A 200 whose summary the model wrote, and whose thread is valid input that
/// counts to `tokens_after`.
async fn written_by_the_model(app: &Router, req: &Value, strategy: &str) -> Value {
    let (status, out) = post(app, "/v1/compress", req).await;
    assert_eq!(status, 200, "{out}");
    assert_eq!(
        out["degraded"], false,
        "the model answered: {}",
        out["warnings"]
    );
    assert_eq!(out["summary"]["strategy"], strategy, "{}", out["summary"]);
    assert_eq!(out["summary"]["model"], "SmolLM2-135M-Instruct");
    let usage = &out["usage"];
    assert!(usage["calls"].as_u64().unwrap() >= 1, "{usage}");
    assert!(usage["prompt_tokens"].as_u64().unwrap() > 0, "{usage}");
    assert!(usage["completion_tokens"].as_u64().unwrap() > 0, "{usage}");
    let limit = req["config"]["max_summary_tokens"].as_u64().unwrap();
    assert!(out["summary"]["token_count"].as_u64().unwrap() <= limit);
    let (status, count) = post(
        app,
        "/v1/tokens",
        &json!({"messages": out["messages"], "tools": req["tools"], "model": req["model"]}),
    )
    .await;
    assert_eq!(status, 200, "the returned thread is valid input: {count}");
    assert_eq!(count["total_tokens"], out["tokens_after"]);
    out
}

const KINDS: [Kind; 2] = [Kind::OpenAi, Kind::Anthropic];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llm_hybrid_and_auto_with_both_clients() {
    for kind in KINDS {
        let Some((app, calls)) = condense("llm_hybrid_and_auto_with_both_clients", kind).await
        else {
            return;
        };
        let small = json!({"max_summary_tokens": 120});
        written_by_the_model(
            &app,
            &request("small-01.openai", "llm", small.clone()),
            "llm",
        )
        .await;

        let out =
            written_by_the_model(&app, &request("small-01.openai", "hybrid", small), "hybrid")
                .await;
        let content = out["summary"]["content"].as_str().unwrap();
        let (sections, story) = content
            .split_once("### Narrative\n")
            .unwrap_or_else(|| panic!("a narrative: {content}"));
        assert!(
            sections.contains("### "),
            "the heuristic's sections first: {content}"
        );
        assert!(!story.trim().is_empty(), "then the model's narrative");

        // `auto`: the LLM for a span worth it in a thread big enough (a tier
        // by the thread's total), the heuristic (no call) below either.
        let worth_it =
            json!({"max_summary_tokens": 120, "llm_min_tokens": 100, "llm_min_total_tokens": 1000});
        written_by_the_model(&app, &request("small-01.openai", "auto", worth_it), "llm").await;
        let before = calls.count();
        let not_worth = json!({"max_summary_tokens": 120, "llm_min_tokens": 100_000_000});
        let (status, out) = post(
            &app,
            "/v1/compress",
            &request("small-01.openai", "auto", not_worth),
        )
        .await;
        assert_eq!(status, 200, "{out}");
        assert_eq!(out["summary"]["strategy"], "heuristic");
        assert!(out["usage"].is_null());
        assert_eq!(calls.count(), before, "{kind:?}: no upstream call");
        // The same span in a thread below the tier's total: no call.
        let small_thread = json!({"max_summary_tokens": 120, "llm_min_tokens": 100, "llm_min_total_tokens": 100_000_000});
        let (status, out) = post(
            &app,
            "/v1/compress",
            &request("small-01.openai", "auto", small_thread),
        )
        .await;
        assert_eq!(status, 200, "{out}");
        assert_eq!(out["summary"]["strategy"], "heuristic");
        assert_eq!(
            calls.count(),
            before,
            "{kind:?}: below the tier's total, no call"
        );
        let path = match kind {
            Kind::OpenAi => "/v1/chat/completions",
            Kind::Anthropic => "/v1/messages",
        };
        let paths: std::collections::BTreeSet<String> = calls
            .exchanges()
            .iter()
            .map(|c| c.path().to_string())
            .collect();
        assert_eq!(paths.iter().collect::<Vec<_>>(), [path], "{kind:?}");
    }
}

/// A span longer than the model's window is summarized in chunks, each call
/// extending the summary so far; identical requests in flight share them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_spans_are_chunked_and_identical_requests_share_the_calls() {
    for kind in KINDS {
        let Some((app, calls)) = condense(
            "long_spans_are_chunked_and_identical_requests_share_the_calls",
            kind,
        )
        .await
        else {
            return;
        };
        let req = request(
            "medium-02.openai",
            "llm",
            json!({"max_summary_tokens": 100}),
        );
        let tasks: Vec<_> = (0..3)
            .map(|_| {
                let (app, req) = (app.clone(), req.clone());
                tokio::spawn(async move { written_by_the_model(&app, &req, "llm").await })
            })
            .collect();
        let mut outs = Vec::new();
        for t in tasks {
            outs.push(t.await.unwrap());
        }
        let chunks = outs[0]["usage"]["calls"].as_u64().unwrap();
        assert!(
            chunks >= 2,
            "{kind:?}: a span over the window takes several calls: {}",
            outs[0]["usage"]
        );
        assert!(
            outs.iter()
                .all(|o| o["summary"]["content"] == outs[0]["summary"]["content"]),
            "{kind:?}: one summary for all"
        );
        assert_eq!(
            calls.count() as u64,
            chunks,
            "{kind:?}: three requests, one set of calls"
        );
    }
}

/// `group_by: "iteration"` with `llm`: the model writes each old iteration's
/// summary (several iterations per call, each asked again alone when the
/// answer leaves it out), and the answer says so. One client kind: the
/// calls are slow and the path below the client is the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_iteration_summaries_are_written_by_the_model() {
    let Some((app, calls)) = condense(
        "per_iteration_summaries_are_written_by_the_model",
        Kind::OpenAi,
    )
    .await
    else {
        return;
    };
    let call = |id: &str, cmd: &str| json!({"id": id, "type": "function", "function": {"name": "shell", "arguments": json!({"command": cmd}).to_string()}});
    let messages = json!([
        {"role": "user", "content": "Run the tests.", "metadata": {"iteration": 1}},
        {"role": "assistant", "content": null, "tool_calls": [call("a", "cargo test")]},
        {"role": "tool", "tool_call_id": "a", "content": "error[E0425]: cannot find value `x`\nexit status: 101"},
        {"role": "assistant", "content": "The test fails: `x` is undefined in src/lib.rs."},
        {"role": "user", "content": "Fix src/lib.rs.", "metadata": {"iteration": 2}},
        {"role": "assistant", "content": "I defined `x` in src/lib.rs; the tests pass."},
        {"role": "user", "content": "Now write the docs.", "metadata": {"iteration": 3}},
        {"role": "assistant", "content": "Writing README.md."},
    ]);
    let req = json!({"messages": messages, "force": true, "group_by": "iteration",
                     "keep_recent_iterations": 1, "summarizer": {"strategy": "llm"},
                     "config": {"max_summary_tokens": 300, "on_upstream_error": "fail"}});
    let (status, out) = post(&app, "/v1/compress", &req).await;
    assert_eq!(status, 200, "{out}");
    assert_eq!(out["degraded"], false, "{}", out["warnings"]);
    assert_eq!(out["summary"]["strategy"], "llm", "{}", out["summary"]);
    assert_eq!(out["summary"]["model"], "SmolLM2-135M-Instruct");
    let usage = &out["usage"];
    assert!(usage["calls"].as_u64().unwrap() >= 1, "{usage}");
    assert!(usage["completion_tokens"].as_u64().unwrap() > 0, "{usage}");
    assert_eq!(calls.count() as u64, usage["calls"].as_u64().unwrap());
    let summaries = out["summaries"].as_array().expect("summaries");
    let its: Vec<u64> = summaries
        .iter()
        .map(|s| s["iteration"].as_u64().unwrap())
        .collect();
    assert_eq!(its, [1, 2], "{out}");
    assert!(
        summaries
            .iter()
            .all(|s| !s["content"].as_str().unwrap().trim().is_empty()),
        "{out}"
    );
    assert!(out["summary"]["token_count"].as_u64().unwrap() <= 300);
    assert_eq!(out["context_injection"], out["summary"]["content"]);
}
