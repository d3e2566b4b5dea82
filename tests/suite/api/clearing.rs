//! Tool-result clearing through `/v1/compress`, in every wire format: the
//! strategy alone, before a summary, its triggers and options, thinking,
//! and its errors.

use serde_json::{Value, json};

use super::clear_model::{Call, Conversation, Turn, Wire, id, wires};
use crate::support::common::{app, post};

/// A user request, then `n` tool rounds of one call each (`read_file` and
/// `bash` in turn, each output `chars` characters), then an answer.
fn agent(n: usize, chars: usize) -> Conversation {
    let mut turns = vec![Turn::User("fix the failing test".into())];
    for i in 0..n {
        let name = if i % 2 == 0 { "read_file" } else { "bash" };
        turns.push(Turn::Tools {
            thinking: None,
            calls: vec![Call {
                name: name.into(),
                input: format!("step {i}"),
                output: format!("{i}:").repeat(chars / 2)[..chars].to_string(),
                error: false,
            }],
        });
    }
    turns.push(Turn::Assistant {
        thinking: None,
        text: "done".into(),
    });
    Conversation {
        turns,
        pending: false,
    }
}

fn body(wire: &dyn Wire, c: &Conversation, extra: Value) -> Value {
    let mut b = wire.render(c);
    for (k, v) in extra.as_object().unwrap() {
        b[k] = v.clone();
    }
    b
}

/// The count `/v1/tokens` gives a thread (its messages and system, by the
/// format's names for them).
async fn recount(app: &axum::Router, wire: &dyn Wire, r: &Value) -> u64 {
    let (messages, system) = wire.keys();
    let mut req = json!({"format": wire.format(), messages: r[messages]});
    if let Some(s) = r.get(system) {
        req[system] = s.clone();
    }
    post(app, "/v1/tokens", &req).await.json()["total_tokens"]
        .as_u64()
        .unwrap()
}

fn clear_only(clear: Value) -> Value {
    json!({"summarizer": {"strategy": "clear_tool_results"}, "config": {"clear": clear}})
}

/// The text of a result as the format carries it (a string, or text
/// blocks; a Responses output's `output`).
fn result_text(result: &Value) -> String {
    let content = match result.get("output") {
        Some(output) => output,
        None => &result["content"],
    };
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks.iter().map(|b| b["text"].as_str().unwrap()).collect(),
        other => panic!("unexpected content {other}"),
    }
}

#[tokio::test]
async fn the_strategy_alone_clears_all_but_the_newest_keep_and_reports_a_recount() {
    let app = app();
    let c = agent(6, 3000);
    for wire in wires() {
        let input = body(wire, &c, clear_only(json!({"trigger": {"tool_uses": 6}})));
        let r = post(&app, "/v1/compress", &input).await;
        assert_eq!(r.status, 200, "{}", r.text());
        let r = r.json();
        assert_eq!(r["compressed"], true);
        assert_eq!(r["reason"], "tool_results_cleared");
        assert_eq!(r["summary"], Value::Null);
        assert_eq!(
            r[wire.keys().0].as_array().unwrap().len(),
            input[wire.keys().0].as_array().unwrap().len()
        );
        let before = recount(&app, wire, &input).await;
        let after = recount(&app, wire, &r).await;
        assert_eq!(r["tokens_before"], before);
        assert_eq!(r["tokens_after"], after);
        assert_eq!(
            r["applied_edits"],
            json!([{"type": "clear_tool_uses", "cleared_tool_uses": 3,
                    "cleared_input_tokens": before - after, "kept_tool_uses": 3}])
        );
        assert!(
            before - after > 2000,
            "three 3,000-character results went: {before} -> {after}"
        );
        let messages = r[wire.keys().0].as_array().unwrap();
        let sent = input[wire.keys().0].as_array().unwrap();
        for n in 0..6 {
            let (call, result) = wire.find(messages, &id(n));
            let (call_in, result_in) = wire.find(sent, &id(n));
            assert_eq!(call, call_in, "inputs are kept by default");
            if n < 3 {
                let name = if n % 2 == 0 { "read_file" } else { "bash" };
                assert_eq!(
                    result_text(result.as_ref().unwrap()),
                    format!("[condense cleared this {name} result: 3,000 characters]")
                );
            } else {
                assert_eq!(result, result_in, "the newest three are untouched");
            }
        }

        // Not due: one tool use short of the trigger.
        let input = body(wire, &c, clear_only(json!({"trigger": {"tool_uses": 7}})));
        let r = post(&app, "/v1/compress", &input).await.json();
        assert_eq!(r["compressed"], false);
        assert_eq!(r["applied_edits"], json!([]));
        assert_eq!(r[wire.keys().0], input[wire.keys().0]);
    }
}

#[tokio::test]
async fn the_input_token_trigger_the_default_keep_and_clear_at_least() {
    let app = app();
    let c = agent(5, 2000);
    for wire in wires() {
        let input = body(wire, &c, json!({}));
        let total = recount(&app, wire, &input).await;
        let run = |clear: Value| {
            let app = app.clone();
            let b = body(wire, &c, clear_only(clear));
            async move { post(&app, "/v1/compress", &b).await.json() }
        };
        let r = run(json!({"trigger": {"input_tokens": total + 1}})).await;
        assert_eq!(r["compressed"], false, "below the trigger");
        let r = run(json!({"trigger": {"input_tokens": total}})).await;
        assert_eq!(
            r["applied_edits"][0]["cleared_tool_uses"], 2,
            "default keep is 3"
        );
        let saved = r["applied_edits"][0]["cleared_input_tokens"]
            .as_u64()
            .unwrap();
        // `clear_at_least` one more than the saving: nothing at all.
        let r = run(json!({"trigger": {"input_tokens": total}, "clear_at_least": saved + 1})).await;
        assert_eq!(r["compressed"], false);
        assert_eq!(r[wire.keys().0], input[wire.keys().0]);
        let r = run(json!({"trigger": {"input_tokens": total}, "clear_at_least": saved})).await;
        assert_eq!(r["applied_edits"][0]["cleared_input_tokens"], saved);
        // The default trigger (100,000 tokens) is far away; `force` skips it.
        assert_eq!(run(json!({})).await["compressed"], false);
        let mut forced = body(wire, &c, clear_only(json!({})));
        forced["force"] = json!(true);
        let r = post(&app, "/v1/compress", &forced).await.json();
        assert_eq!(r["applied_edits"][0]["cleared_tool_uses"], 2);
        // The strategy without any `clear` object: the defaults.
        let mut bare = body(
            wire,
            &c,
            json!({"summarizer": {"strategy": "clear_tool_results"}, "force": true}),
        );
        bare["force"] = json!(true);
        assert_eq!(
            post(&app, "/v1/compress", &bare).await.json()["applied_edits"],
            r["applied_edits"]
        );
    }
}

#[tokio::test]
async fn excluded_tools_inputs_and_a_custom_placeholder() {
    let app = app();
    let c = agent(6, 1000);
    for wire in wires() {
        let clear = json!({"keep": 1, "trigger": {"tool_uses": 1}, "exclude_tools": ["bash"],
                           "clear_tool_inputs": true, "placeholder": "[gone: {tool}, {chars} chars]"});
        let input = body(wire, &c, clear_only(clear));
        let r = post(&app, "/v1/compress", &input).await.json();
        // Uses 0, 2, 4 are read_file; 1 and 3 are bash (excluded); 5 is the newest.
        assert_eq!(r["applied_edits"][0]["cleared_tool_uses"], 3);
        assert_eq!(r["applied_edits"][0]["kept_tool_uses"], 3);
        let messages = r[wire.keys().0].as_array().unwrap();
        let sent = input[wire.keys().0].as_array().unwrap();
        for n in 0..6 {
            let (call, result) = wire.find(messages, &id(n));
            let (call_in, result_in) = wire.find(sent, &id(n));
            if n % 2 == 0 && n < 5 {
                assert_eq!(
                    result_text(result.as_ref().unwrap()),
                    "[gone: read_file, 1,000 chars]"
                );
                let call = call.unwrap();
                match wire.format() {
                    condense::thread::WireFormat::OpenAi => {
                        assert_eq!(call["function"]["arguments"], "{}")
                    }
                    condense::thread::WireFormat::Anthropic => assert_eq!(call["input"], json!({})),
                    condense::thread::WireFormat::Responses => {
                        assert_eq!(call["arguments"], "{}")
                    }
                }
            } else {
                assert_eq!((call, result), (call_in, result_in), "tool use {n}");
            }
        }
        // Idempotent: the output cleared again changes nothing.
        let mut again = input.clone();
        again[wire.keys().0] = r[wire.keys().0].clone();
        let second = post(&app, "/v1/compress", &again).await.json();
        assert_eq!(second["compressed"], false);
        assert_eq!(second[wire.keys().0], r[wire.keys().0]);
    }
}

#[tokio::test]
async fn clearing_first_then_a_summary_only_if_still_due() {
    let app = app();
    let c = agent(8, 4000);
    for wire in wires() {
        let input = body(wire, &c, json!({}));
        let total = recount(&app, wire, &input).await;
        let clear = json!({"trigger": {"tool_uses": 1}});
        // Due before clearing, not after: cleared, no summary.
        let b = body(
            wire,
            &c,
            json!({"summarizer": {"strategy": "heuristic"},
            "config": {"clear": clear, "max_tokens_before_summary": total - 100, "max_messages_before_summary": 1000}}),
        );
        let r = post(&app, "/v1/compress", &b).await.json();
        assert_eq!(r["reason"], "tool_results_cleared", "{r}");
        assert_eq!(r["summary"], Value::Null);
        assert_eq!(r["applied_edits"][0]["cleared_tool_uses"], 5);
        // Still due after clearing: cleared, then summarized.
        let b = body(
            wire,
            &c,
            json!({"summarizer": {"strategy": "heuristic"},
            "config": {"clear": clear, "max_messages_before_summary": 4, "min_recent_messages": 2}}),
        );
        let r = post(&app, "/v1/compress", &b).await.json();
        assert_eq!(r["reason"], "messages", "{r}");
        assert!(r["summary"]["content"].is_string());
        assert_eq!(r["applied_edits"][0]["type"], "clear_tool_uses");
        assert_eq!(r["tokens_before"], total);
        assert_eq!(r["tokens_after"], recount(&app, wire, &r).await);
        // Without a `clear` object nothing is cleared before a summary.
        let b = body(
            wire,
            &c,
            json!({"summarizer": {"strategy": "heuristic"},
            "config": {"max_messages_before_summary": 4, "min_recent_messages": 2}}),
        );
        assert_eq!(
            post(&app, "/v1/compress", &b).await.json()["applied_edits"],
            json!([])
        );
    }
}

/// Anthropic thinking: older turns lose it, the newest N keep it, and the
/// in-progress tool loop (after the last user text) keeps all of it.
#[tokio::test]
async fn thinking_keeps_the_last_turns_and_the_tool_loop_in_progress() {
    let app = app();
    let round = |k: usize| Turn::Tools {
        thinking: Some(format!("let me think about step {k} ").repeat(40)),
        calls: vec![Call {
            name: "bash".into(),
            input: format!("step {k}"),
            output: "ok".into(),
            error: false,
        }],
    };
    let c = Conversation {
        turns: vec![
            Turn::User("first task".into()),
            round(1),
            Turn::Assistant {
                thinking: Some("so the answer is ".repeat(30)),
                text: "first done".into(),
            },
            Turn::User("second task".into()),
            round(4),
            round(5),
            round(6),
        ],
        pending: true,
    };
    let wire = &super::clear_model::Anthropic;
    let input = body(
        wire,
        &c,
        clear_only(json!({"keep": 100, "trigger": {"tool_uses": 1}, "keep_thinking_turns": 1})),
    );
    let r = post(&app, "/v1/compress", &input).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let r = r.json();
    let before = recount(&app, wire, &input).await;
    let after = recount(&app, wire, &r).await;
    assert_eq!(
        r["applied_edits"],
        json!([{"type": "clear_thinking", "cleared_thinking_turns": 2, "cleared_input_tokens": before - after}])
    );
    let (sent, out) = (
        input[wire.keys().0].as_array().unwrap(),
        r[wire.keys().0].as_array().unwrap(),
    );
    assert_eq!(out.len(), sent.len());
    // Messages: 0 user, 1 tools, 2 results, 3 assistant, 4 user, 5-9 the loop (6 results, 8 results, 9 pending).
    assert!(wire.thinking(&out[1]).is_empty() && wire.thinking(&out[3]).is_empty());
    assert_eq!(
        out[3]["content"],
        json!([{"type": "text", "text": "first done"}])
    );
    for i in [5, 7, 9] {
        assert!(!wire.thinking(&sent[i]).is_empty());
        assert_eq!(
            out[i], sent[i],
            "the tool loop in progress keeps its thinking byte for byte"
        );
    }
}

#[tokio::test]
async fn thinking_is_never_summarized_into_text() {
    let app = app();
    let c = Conversation {
        turns: (0..6)
            .flat_map(|i| {
                [
                    Turn::User(format!("request {i}")),
                    Turn::Assistant {
                        thinking: Some(
                            "maybe src/secret_thought.rs\nerror: PRIVATE_REASONING".into(),
                        ),
                        text: format!("answer {i}"),
                    },
                ]
            })
            .collect(),
        pending: false,
    };
    let b = body(
        &super::clear_model::Anthropic,
        &c,
        json!({"summarizer": {"strategy": "heuristic"}, "force": true}),
    );
    let r = post(&app, "/v1/compress", &b).await.json();
    let summary = r["summary"]["content"].as_str().expect("a summary");
    assert!(summary.contains("request 0"), "{summary}");
    assert!(
        !summary.contains("secret_thought") && !summary.contains("PRIVATE_REASONING"),
        "{summary}"
    );
}

#[tokio::test]
async fn a_bad_clear_object_is_a_422_naming_the_field() {
    let app = app();
    let c = agent(2, 100);
    for (clear, pointer) in [
        (json!({"keep": 1_000_000}), "/config/clear/keep"),
        (
            json!({"trigger": {"tool_uses": 0}}),
            "/config/clear/trigger/tool_uses",
        ),
        (json!({"trigger": {}}), "/config/clear/trigger"),
        (json!({"placeholder": ""}), "/config/clear/placeholder"),
        (
            json!({"exclude_tools": ["a", ""]}),
            "/config/clear/exclude_tools/1",
        ),
    ] {
        let r = post(
            &app,
            "/v1/compress",
            &body(&super::clear_model::OpenAi, &c, clear_only(clear.clone())),
        )
        .await;
        assert_eq!(r.pointers(), [pointer], "{clear}");
    }
    let r = post(
        &app,
        "/v1/compress",
        &body(
            &super::clear_model::OpenAi,
            &c,
            clear_only(json!({"keeep": 2})),
        ),
    )
    .await;
    let p = r.problem(422);
    assert!(p.to_string().contains("keeep"), "{p}");
}

/// Clearing alone over the window: the thread comes back cleared, and the
/// answer says it still does not fit rather than a silent 200.
#[tokio::test]
async fn clearing_alone_that_cannot_fit_says_so() {
    let app = app();
    // One kept result of 20,000 characters: more than a 2,048-token window.
    let c = agent(4, 20_000);
    for wire in wires() {
        let mut input = body(
            wire,
            &c,
            json!({"summarizer": {"strategy": "clear_tool_results"}, "force": true,
                   "config": {"context_window": 2048}}),
        );
        input["force"] = json!(true);
        let r = post(&app, "/v1/compress", &input).await.json();
        let warnings = r["warnings"].to_string();
        assert!(r["tokens_after"].as_u64().unwrap() > 2048, "{r}");
        assert!(warnings.contains("context_window 2048"), "{warnings}");
        // Under the window: no such warning.
        let mut small = body(
            wire,
            &agent(2, 100),
            json!({"summarizer": {"strategy": "clear_tool_results"}}),
        );
        small["force"] = json!(true);
        let r = post(&app, "/v1/compress", &small).await.json();
        assert!(!r["warnings"].to_string().contains("context_window"), "{r}");
    }
}
