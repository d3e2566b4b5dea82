//! The designs condense replaces, on the compression side: per-message
//! truncation rules, the LLM tier by the thread's total, what the status
//! block shows, and the warnings a client needs.

use serde_json::{Value, json};

use crate::support::common::{app, post, thread};

/// The characters of each text a rule may cut: (request index, is a tool result, length).
fn texts(messages: &[Value]) -> Vec<(usize, bool, usize)> {
    let mut out = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        let role = m["role"].as_str().unwrap_or_default();
        match &m["content"] {
            Value::String(s) if role == "tool" || role == "user" => {
                out.push((i, role == "tool", s.chars().count()))
            }
            Value::Array(blocks) => {
                for b in blocks {
                    if b["type"] == "tool_result" {
                        let len = match &b["content"] {
                            Value::String(s) => s.chars().count(),
                            Value::Array(parts) => parts
                                .iter()
                                .filter_map(|p| p["text"].as_str())
                                .map(|s| s.chars().count())
                                .max()
                                .unwrap_or(0),
                            _ => 0,
                        };
                        out.push((i, true, len));
                    } else if b["type"] == "text" && role == "user" {
                        out.push((i, false, b["text"].as_str().unwrap().chars().count()));
                    }
                }
            }
            _ => {}
        }
    }
    out
}

#[tokio::test]
async fn prompts_cut_to_500_and_tool_output_to_5000_characters() {
    // A coding agent's spec: a raw window with prompts cut to 500 characters
    // and outputs to 5,000. Nothing is due yet: the rules still apply.
    let app = app();
    for name in ["medium-02.openai", "medium-02.anthropic"] {
        let t = thread(name);
        let long_user = "Please do this. ".repeat(100);
        let mut messages = t["messages"].as_array().unwrap().clone();
        let at = messages.iter().position(|m| m["role"] == "user").unwrap();
        messages[at]["content"] = json!(long_user);
        let config = json!({"max_user_message_chars": 500, "max_tool_result_chars": 5000,
                            "max_messages_before_summary": 1000});
        let body = json!({"messages": messages, "system": t["system"], "tools": t["tools"],
                          "model": t["model"], "config": config});
        let r = post(&app, "/v1/compress", &body).await;
        assert_eq!(r.status, 200, "{name}: {}", r.text());
        let out = r.json();
        assert_eq!(out["reason"], "rules", "{name}");
        let before = texts(&messages);
        let after = texts(out["messages"].as_array().unwrap());
        let expected: Vec<usize> = {
            let mut v: Vec<usize> = before
                .iter()
                .filter(|(_, tool, n)| *n > if *tool { 5000 } else { 500 })
                .map(|(i, _, _)| *i)
                .collect();
            v.dedup();
            v
        };
        assert!(!expected.is_empty(), "{name} has texts over the limits");
        assert_eq!(out["messages_truncated"], json!(expected), "{name}");
        for (i, tool, n) in &after {
            assert!(
                *n <= if *tool { 5000 } else { 500 },
                "{name} message {i}: {n} characters"
            );
        }
        let cut = out["messages"][at]["content"].as_str().unwrap();
        assert!(
            cut.starts_with("Please do this.") && cut.contains("…[truncated"),
            "{cut}"
        );
        assert!(out["tokens_after"].as_u64() < out["tokens_before"].as_u64());
        // Applied again to its own answer, the rules change nothing.
        let again = json!({"messages": out["messages"], "system": t["system"], "tools": t["tools"],
                           "model": t["model"], "config": config});
        let second = post(&app, "/v1/compress", &again).await.json();
        assert_eq!(second["compressed"], false, "{name}");
        assert_eq!(second["messages"], out["messages"]);
    }
}

#[tokio::test]
async fn rules_keep_the_head_or_the_tail_and_apply_to_a_compressed_tail() {
    let app = app();
    let log = (1..=400).map(|i| format!("line {i}\n")).collect::<String>();
    let mut messages = vec![json!({"role": "system", "content": "You are an agent."})];
    for i in 0..12 {
        messages.push(json!({"role": "user", "content": format!("run step {i}")}));
        messages.push(json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": format!("c{i}"), "type": "function", "function": {"name": "sh", "arguments": "{}"}}]}));
        messages.push(json!({"role": "tool", "tool_call_id": format!("c{i}"), "content": log}));
    }
    for (keep, present, absent) in [
        ("head", "line 1\n", "line 400"),
        ("tail", "line 400", "line 1\n"),
    ] {
        let body = json!({"messages": messages, "force": true, "summarizer": {"strategy": "heuristic"},
                          "config": {"max_tool_result_chars": 300, "truncate_keep": keep, "min_recent_messages": 6}});
        let out = post(&app, "/v1/compress", &body).await.json();
        assert_eq!(out["compressed"], true, "{out}");
        let kept = out["messages"].as_array().unwrap();
        let results: Vec<&str> = kept
            .iter()
            .filter(|m| m["role"] == "tool")
            .map(|m| m["content"].as_str().unwrap())
            .collect();
        assert!(!results.is_empty());
        for r in results {
            assert!(r.chars().count() <= 300, "{keep}: {}", r.chars().count());
            assert!(r.contains(present) && !r.contains(absent), "{keep}: {r}");
        }
        assert_eq!(
            kept[0]["content"], "You are an agent.",
            "the system prompt is never cut"
        );
    }
}

#[tokio::test]
async fn the_llm_tier_is_chosen_by_the_thread_total_and_auto_is_quiet_without_an_upstream() {
    // A two-tier design: heuristic between 80k and 120k tokens, an LLM above 120k
    // of the whole thread. With no upstream, `auto` writing the heuristic summary is
    // the expected path: the summary says `heuristic`, and nothing warns.
    let app = app();
    let t = thread("large-04.openai");
    let body = |total: u64| {
        json!({"messages": t["messages"], "tools": t["tools"], "model": "gpt-4o",
               "summarizer": {"strategy": "auto"},
               "config": {"max_tokens_before_summary": 80000, "llm_min_total_tokens": total}})
    };
    let above = post(&app, "/v1/compress", &body(120_000)).await.json();
    assert_eq!(above["summary"]["strategy"], "heuristic");
    assert!(
        !above["warnings"].to_string().contains("upstream"),
        "{}",
        above["warnings"]
    );
    // A thread below the tier's total: the heuristic is the design's choice, no warning.
    let below = post(&app, "/v1/compress", &body(1_000_000)).await.json();
    assert!(
        !below["warnings"].to_string().contains("none is configured"),
        "{}",
        below["warnings"]
    );
    // A summarizer model asked for is ignored, and that is said.
    let mut asked = body(120_000);
    asked["summarizer"]["model"] = json!("gpt-4o-mini");
    let r = post(&app, "/v1/compress", &asked).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let warnings = r.json()["warnings"].to_string();
    assert!(warnings.contains("is ignored: no upstream"), "{warnings}");
}

/// The verdict's status block for a person (`Accept: text/plain`).
async fn status(app: &axum::Router, body: Value) -> String {
    let req = axum::http::Request::post("/v1/verdict")
        .header("content-type", "application/json")
        .header("accept", "text/plain")
        .body(axum::body::Body::from(body.to_string()))
        .unwrap();
    crate::support::common::send(app, req).await.text()
}

#[tokio::test]
async fn the_status_block_shows_the_last_summary_and_floored_bars() {
    let app = app();
    let mut messages = crate::support::common::chat(12);
    messages.insert(0, json!({"role": "user", "content": "[Context Summary - 40 previous messages]\n\nEarlier work."}));
    let body = json!({"messages": messages, "config": {"max_messages_before_summary": 12}});
    let json_view = post(&app, "/v1/verdict", &body).await.json();
    assert_eq!(json_view["last_summary"]["messages_summarized"], 40);
    // 7 since the summary, of 8: 87.5 % is 17.5 cells, shown as 17 (floored), not 18.
    let text = status(
        &app,
        json!({"messages": &messages[..8], "config": {"max_messages_before_summary": 8}}),
    )
    .await;
    assert!(text.contains("last summary: 40 messages"), "{text}");
    assert!(text.contains("(87.5%) [█████████████████░░░]"), "{text}");
    // A summary object with its date: shown too.
    let text = status(
        &app,
        json!({"messages": crate::support::common::chat(20),
               "summary": {"last_message_idx": 9, "content": "ten messages", "created_at": "2026-11-23T10:00:00Z"}}),
    )
    .await;
    assert!(
        text.contains("last summary: 10 messages") && text.contains("written 2026-11-23T10:00:00Z"),
        "{text}"
    );
}

#[tokio::test]
async fn a_compressed_thread_with_its_old_summary_object_is_served_with_a_warning() {
    let app = app();
    let t = thread("medium-02.openai");
    let first = json!({"messages": t["messages"], "tools": t["tools"], "model": t["model"], "force": true,
                       "summarizer": {"strategy": "heuristic"}});
    let out = post(&app, "/v1/compress", &first).await.json();
    // The client sends the compressed thread back with the summary object it got.
    let mut messages = out["messages"].as_array().unwrap().clone();
    messages.push(json!({"role": "user", "content": "and now?"}));
    for path in ["/v1/verdict", "/v1/compress"] {
        let body = json!({"messages": messages, "tools": t["tools"], "model": t["model"], "summary": out["summary"]});
        let r = post(&app, path, &body).await;
        assert_eq!(r.status, 200, "{path}: {}", r.text());
        let said = r.json()["warnings"].to_string();
        assert!(
            said.contains("summary message") && said.contains("ignored"),
            "{path}: {said}"
        );
    }
}

#[tokio::test]
async fn instructions_a_heuristic_cannot_follow_are_reported() {
    let app = app();
    let t = thread("medium-02.openai");
    let body = json!({"messages": t["messages"], "tools": t["tools"], "model": t["model"], "force": true,
                      "summarizer": {"strategy": "heuristic", "instructions": "Keep every file path."}});
    let out = post(&app, "/v1/compress", &body).await.json();
    assert!(
        out["warnings"].to_string().contains("instructions"),
        "{}",
        out["warnings"]
    );
    let plain = json!({"messages": t["messages"], "tools": t["tools"], "model": t["model"], "force": true,
                       "summarizer": {"strategy": "heuristic"}});
    let out = post(&app, "/v1/compress", &plain).await.json();
    assert!(!out["warnings"].to_string().contains("instructions"));
}
