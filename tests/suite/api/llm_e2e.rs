//! End to end against a real LLM server (llama.cpp's llama-server with
//! SmolLM2-135M-Instruct, started by `scripts/local-llm.sh`; the test command
//! exports its URL as `CONDENSE_TEST_LLM_URL`). The model is tiny: this judges
//! the mechanics (a valid thread, a summary the model wrote, its usage), not
//! the prose.

use std::time::Instant;

use serde_json::json;

use crate::support::common::{app_with_local_llm, post, thread};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_model_writes_the_summary() {
    let Some(url) = crate::support::live::llm("a_real_model_writes_the_summary") else {
        return;
    };
    let app = app_with_local_llm(url);
    let t = thread("medium-02.openai");
    let body = json!({
        "messages": t["messages"], "tools": t["tools"], "model": t["model"], "force": true,
        "summarizer": {"strategy": "llm"}, "config": {"max_summary_tokens": 400}
    });
    let started = Instant::now();
    let r = post(&app, "/v1/compress", &body).await;
    let took = started.elapsed();
    assert_eq!(r.status, 200, "{}", r.text());
    let out = r.json();
    eprintln!(
        "e2e llm compression of medium-02 ({} -> {} tokens): {:.1} s, usage {}",
        out["tokens_before"],
        out["tokens_after"],
        took.as_secs_f64(),
        out["usage"]
    );
    assert_eq!(
        out["degraded"], false,
        "the model answered: {}",
        out["warnings"]
    );
    assert_eq!(out["summary"]["strategy"], "llm");
    assert_eq!(out["summary"]["model"], "SmolLM2-135M-Instruct");
    let usage = &out["usage"];
    assert!(usage["prompt_tokens"].as_u64().unwrap() > 500, "{usage}");
    assert!(usage["completion_tokens"].as_u64().unwrap() > 0, "{usage}");
    // A span this long does not fit an 8k window in one call: it was chunked.
    assert!(usage["calls"].as_u64().unwrap() >= 2, "{usage}");
    let content = out["summary"]["content"].as_str().unwrap();
    assert!(!content.trim().is_empty());
    assert!(out["summary"]["token_count"].as_u64().unwrap() <= 400);
    // The returned thread is valid input and fits.
    let check = post(
        &app,
        "/v1/tokens",
        &json!({"messages": out["messages"], "tools": t["tools"], "model": t["model"]}),
    )
    .await;
    assert_eq!(check.status, 200, "{}", check.text());
    assert_eq!(check.json()["total_tokens"], out["tokens_after"]);
}
