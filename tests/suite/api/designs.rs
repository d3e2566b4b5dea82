//! The context managers condense replaces, each configured as its design
//! configures itself, through the API: estimator-based triggers, a tier by
//! the thread's total, per-message truncation rules, an iteration trigger,
//! an explicit encoding, YAML profiles, the status block. (Per-iteration
//! summaries are in `iterations.rs`.)

use serde_json::{Value, json};

use crate::support::common::{app, app_with, post, thread};

/// Every string a message holds, in characters: what an agent's own
/// `chars / N` estimator measures (written here from the wire format, not
/// from condense's counter).
fn characters(v: &Value) -> usize {
    match v {
        Value::String(s) => s.chars().count(),
        Value::Array(items) => items.iter().map(characters).sum(),
        Value::Object(map) => map
            .iter()
            .filter(|(k, _)| !matches!(k.as_str(), "type" | "id" | "tool_use_id" | "tool_call_id"))
            .map(|(_, v)| characters(v))
            .sum(),
        _ => 0,
    }
}

fn design_estimate(t: &Value, chars_per_token: f64) -> f64 {
    let chars = characters(&t["messages"]) + characters(&t["system"]);
    (chars as f64 / chars_per_token).ceil()
}

#[tokio::test]
async fn a_chars_estimator_drives_the_verdict_and_the_budget() {
    // A context manager with a chars/3.5 estimator and a 150,000-token window,
    // triggering at 0.8 of it.
    let app = app();
    let t = thread("large-04.anthropic");
    let design = json!({
        "messages": t["messages"], "system": t["system"], "model": t["model"],
        "method": "chars", "chars_per_token": 3.5,
        "config": {"context_window": 150000, "max_tokens_before_summary": 120000,
                   "max_messages_before_summary": 1000000}
    });
    let v = post(&app, "/v1/verdict", &design).await.json();
    let estimate = design_estimate(&t, 3.5);
    let total = v["total_tokens"].as_f64().unwrap();
    assert!(
        (total - estimate).abs() / estimate < 0.03,
        "condense estimates {total}, the design's chars/3.5 {estimate}"
    );
    assert_eq!(v["exact"], false);
    // The same thread counted by the tokenizer is another number.
    let bpe = post(
        &app,
        "/v1/verdict",
        &json!({"messages": t["messages"], "system": t["system"], "model": t["model"]}),
    )
    .await
    .json();
    assert_ne!(bpe["total_tokens"], v["total_tokens"]);
    // The trigger fires where the design's own estimate says.
    let due = estimate >= 120_000.0;
    assert_eq!(v["should_summarize"], due, "{v}");

    // Compression counts the same way: its `tokens_before` is the verdict's total.
    let mut compress = design.clone();
    compress["force"] = json!(true);
    compress["summarizer"] = json!({"strategy": "heuristic"});
    let c = post(&app, "/v1/compress", &compress).await.json();
    assert_eq!(c["tokens_before"], v["total_tokens"], "{}", c["warnings"]);
    assert!(c["tokens_after"].as_u64().unwrap() < c["tokens_before"].as_u64().unwrap());

    // chars/4 gives fewer tokens than chars/3.5, and /v1/tokens agrees.
    let four = post(&app, "/v1/tokens", &json!({"messages": t["messages"], "system": t["system"], "model": t["model"], "chars_per_token": 4}))
        .await
        .json();
    let v4 = post(&app, "/v1/verdict", &json!({"messages": t["messages"], "system": t["system"], "model": t["model"], "chars_per_token": 4}))
        .await
        .json();
    assert_eq!(four["total_tokens"], v4["total_tokens"]);
    assert!(v4["total_tokens"].as_u64() < v["total_tokens"].as_u64());
}

#[tokio::test]
async fn a_profile_can_count_with_chars_and_a_request_can_still_ask_for_bpe() {
    let dir = std::env::temp_dir().join(format!("condense-yaml-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("agents.yaml");
    std::fs::write(
        &file,
        "profiles:\n  estimator:\n    chars_per_token: 3.5\n    max_messages_before_summary: 30\n  sprint:\n    max_tokens_before_summary: 128000\n    min_recent_messages: 6\n",
    )
    .unwrap();
    let app = app_with(condense::Config {
        models: condense::config::ModelSettings {
            profiles_file: Some(file),
            ..Default::default()
        },
        ..Default::default()
    });
    let t = thread("medium-02.openai");
    let body = |extra: Value| {
        let mut b = json!({"messages": t["messages"], "tools": t["tools"], "model": t["model"]});
        for (k, v) in extra.as_object().unwrap() {
            b[k] = v.clone();
        }
        b
    };
    let by_profile = post(&app, "/v1/verdict", &body(json!({"profile": "estimator"})))
        .await
        .json();
    let by_request = post(&app, "/v1/verdict", &body(json!({"chars_per_token": 3.5})))
        .await
        .json();
    assert_eq!(by_profile["total_tokens"], by_request["total_tokens"]);
    assert_eq!(by_profile["exact"], false);
    let bpe = post(
        &app,
        "/v1/verdict",
        &body(json!({"profile": "estimator", "method": "bpe"})),
    )
    .await
    .json();
    let plain = post(&app, "/v1/verdict", &body(json!({}))).await.json();
    assert_eq!(bpe["total_tokens"], plain["total_tokens"]);
    assert_ne!(bpe["total_tokens"], by_profile["total_tokens"]);
    // The YAML file's other profile is listed with its fields.
    let listed = crate::support::common::get(&app, "/v1/profiles")
        .await
        .json();
    assert_eq!(
        listed["profiles"]["sprint"]["max_tokens_before_summary"],
        128000
    );
    assert_eq!(listed["profiles"]["estimator"]["chars_per_token"], 3.5);
}

#[tokio::test]
async fn a_named_encoding_is_counted_as_it_is() {
    let app = app();
    let t = thread("small-00.anthropic");
    let claude_cl100k = post(&app, "/v1/tokens", &json!({"messages": t["messages"], "system": t["system"], "model": "claude-sonnet-4-5", "encoding": "cl100k_base"}))
        .await
        .json();
    // gpt-4 uses cl100k_base with no calibration: the same count.
    let gpt4 = post(
        &app,
        "/v1/tokens",
        &json!({"messages": t["messages"], "system": t["system"], "model": "gpt-4"}),
    )
    .await
    .json();
    assert_eq!(claude_cl100k["total_tokens"], gpt4["total_tokens"]);
    let warned = claude_cl100k["warnings"].to_string();
    assert!(
        warned.contains("calibration") && warned.contains("not applied"),
        "{warned}"
    );
    // Without the encoding, Claude's calibration applies.
    let claude = post(
        &app,
        "/v1/tokens",
        &json!({"messages": t["messages"], "system": t["system"], "model": "claude-sonnet-4-5"}),
    )
    .await
    .json();
    assert!(claude["total_tokens"].as_u64() > gpt4["total_tokens"].as_u64());
}

/// `n` iterations of a user request and an assistant answer, tagged.
fn iterations(n: u64) -> Vec<Value> {
    (1..=n)
        .flat_map(|i| {
            [
                json!({"role": "user", "content": format!("step {i}: edit src/m{i}.rs"), "metadata": {"iteration": i}}),
                json!({"role": "assistant", "content": format!("Edited src/m{i}.rs."), "metadata": {"iteration": i}}),
            ]
        })
        .collect()
}

#[tokio::test]
async fn re_summarize_every_ten_iterations() {
    // A coding agent's spec: re-summarize every 10 iterations.
    let app = app();
    let config = json!({"max_iterations_before_summary": 10, "min_recent_messages": 0});
    let nine = post(
        &app,
        "/v1/verdict",
        &json!({"messages": iterations(9), "config": config}),
    )
    .await
    .json();
    assert_eq!(nine["should_summarize"], false, "{nine}");
    assert_eq!(nine["iterations_since_summary"], 9);
    assert_eq!(nine["iterations_threshold"], 10);
    assert_eq!(nine["iterations_percent"], 90.0);
    let ten = post(
        &app,
        "/v1/verdict",
        &json!({"messages": iterations(10), "config": config}),
    )
    .await
    .json();
    assert_eq!(ten["trigger"], "iterations", "{ten}");
    // Iterations the summary covers do not count again.
    let after = post(
        &app,
        "/v1/verdict",
        &json!({"messages": iterations(14), "config": config,
                "summary": {"last_message_idx": 13, "content": "the first seven iterations"}}),
    )
    .await
    .json();
    assert_eq!(after["iterations_since_summary"], 7, "{after}");
    assert_eq!(after["should_summarize"], false);
    // Compression gives the reason.
    let c = post(
        &app,
        "/v1/compress",
        &json!({"messages": iterations(10), "config": {"max_iterations_before_summary": 10, "min_recent_messages": 4}, "summarizer": {"strategy": "heuristic"}}),
    )
    .await
    .json();
    assert_eq!(c["reason"], "iterations", "{c}");
    // Off by default.
    let off = post(&app, "/v1/verdict", &json!({"messages": iterations(40)}))
        .await
        .json();
    assert_eq!(off["iterations_threshold"], Value::Null);
    assert_ne!(off["trigger"], "iterations");
}
