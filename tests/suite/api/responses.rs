//! The OpenAI Responses API as a third wire format: golden counts of its
//! text against Python tiktoken, items kept verbatim (unknown ones too),
//! pairing by `call_id`, and answers in the same format.

use serde_json::{Value, json};

use crate::support::common::{app, fixture, post};
use crate::support::responses::{Settings, turn};

/// A shared thread in the Responses format (see tests/fixtures/responses/from_chat.py).
fn responses(name: &str) -> Value {
    fixture(&format!("responses/{name}.responses.json"))
}

/// Each golden thread (Python tiktoken 0.14) sent as Responses items: the
/// texts count exactly as tiktoken does, with the chat framing (3 + role)
/// as the item estimate, and the answer says it is an estimate.
#[tokio::test]
async fn golden_texts_count_as_tiktoken_in_responses_items() {
    let app = app();
    let golden = fixture("golden/tokens.json");
    let mut checked = 0;
    for (i, case) in golden["threads"].as_array().unwrap().iter().enumerate() {
        let msgs = case["messages"].as_array().unwrap();
        // A Responses message has no `name`.
        if msgs.iter().any(|m| m.get("name").is_some()) {
            continue;
        }
        checked += 1;
        let input: Vec<Value> = msgs
            .iter()
            .map(|m| {
                let kind = match m["role"].as_str() {
                    Some("assistant") => "output_text",
                    _ => "input_text",
                };
                json!({"type": "message", "role": m["role"], "content": [{"type": kind, "text": m["content"]}]})
            })
            .collect();
        let r = post(
            &app,
            "/v1/tokens",
            &json!({"model": case["model"], "input": input}),
        )
        .await;
        assert_eq!(r.status, 200, "thread {i}: {}", r.text());
        let body = r.json();
        assert_eq!(body["format"], "responses");
        assert_eq!(body["exact"], false, "item overheads are estimates");
        assert!(
            body["warnings"][0].as_str().unwrap().contains("estimate"),
            "{body}"
        );
        let content = case["per_message_content_tokens"].as_array().unwrap();
        for (j, c) in content.iter().enumerate() {
            assert_eq!(
                body["messages"][j]["tokens"].as_u64().unwrap(),
                3 + 1 + c.as_u64().unwrap(),
                "thread {i} item {j}"
            );
        }
        // The same total as the cookbook's count of the chat thread.
        assert_eq!(body["total_tokens"], case["total_tokens"], "thread {i}");
    }
    assert!(checked >= 40, "only {checked} golden threads without names");
}

#[tokio::test]
async fn a_string_input_and_instructions_count_like_a_chat_thread() {
    let app = app();
    let chat = post(
        &app,
        "/v1/tokens",
        &json!({"messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "What is the capital of France?"}
        ]}),
    )
    .await
    .json();
    let r = post(
        &app,
        "/v1/tokens",
        &json!({"instructions": "Be brief.", "input": "What is the capital of France?"}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let body = r.json();
    assert_eq!(body["total_tokens"], chat["total_tokens"]);
    assert_eq!(
        body["messages"][0]["index"],
        Value::Null,
        "the instructions"
    );
    assert_eq!(body["messages"][1]["index"], 0);
}

#[tokio::test]
async fn every_shared_thread_is_read_in_the_responses_format() {
    let app = app();
    for name in ["small-00", "medium-02", "large-04"] {
        let t = responses(name);
        let r = post(&app, "/v1/tokens", &t).await;
        assert_eq!(r.status, 200, "{name}: {}", r.text());
        let body = r.json();
        let items = t["input"].as_array().unwrap().len();
        assert_eq!(body["messages"].as_array().unwrap().len(), items + 1);
        assert!(body["tools_tokens"].as_u64().unwrap() > 0);
        // Reasoning counts: its summary and its encrypted content.
        let reasoning = t["input"]
            .as_array()
            .unwrap()
            .iter()
            .position(|i| i["type"] == "reasoning")
            .unwrap();
        assert!(body["messages"][reasoning + 1]["tokens"].as_u64().unwrap() > 100);
    }
}

/// Forced compression of a Responses thread answers `input` items: the
/// tail verbatim (unknown fields included) but for its reasoning items,
/// which the summary written before them makes stale (OpenAI drops them:
/// removed, and reported), a summary item, no call without its output, and
/// the output reads back as a valid thread.
#[tokio::test]
async fn compression_answers_in_the_responses_format() {
    let app = app();
    let mut t = responses("medium-02");
    let items = t["input"].as_array_mut().unwrap();
    let n = items.len();
    items[n - 1]["x_custom"] = json!({"kept": [1, 2, 3]});
    let original = t["input"].clone();
    let mut req = t.clone();
    req["force"] = json!(true);
    req["summarizer"] = json!({"strategy": "heuristic"});
    let r = post(&app, "/v1/compress", &req).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let body = r.json();
    assert_eq!(body["format"], "responses");
    assert!(body.get("messages").is_none(), "{body}");
    assert_eq!(body["instructions"], t["instructions"]);
    let out = body["input"].as_array().unwrap();
    assert!(out.len() < n);
    assert!(
        out[0]["content"]
            .as_str()
            .unwrap()
            .starts_with("[Context Summary - ")
    );
    // The tail is the input's tail, value for value, without its reasoning.
    let tail = &out[1..];
    let original = original.as_array().unwrap();
    let from = original.len()
        - original
            .iter()
            .rev()
            .scan(0, |kept, i| {
                *kept += usize::from(i["type"] != "reasoning");
                (*kept <= tail.len()).then_some(())
            })
            .count();
    let stale = original[from..]
        .iter()
        .filter(|i| i["type"] == "reasoning")
        .count();
    assert!(stale > 0, "the tail held reasoning");
    let unreasoned: Vec<&Value> = original[from..]
        .iter()
        .filter(|i| i["type"] != "reasoning")
        .collect();
    assert_eq!(tail.iter().collect::<Vec<_>>(), unreasoned);
    assert_eq!(tail.last().unwrap()["x_custom"], json!({"kept": [1, 2, 3]}));
    assert_eq!(
        body["applied_edits"],
        json!([{"type": "remove_stale_thinking", "removed_thinking_turns": stale,
                "cleared_input_tokens": body["applied_edits"][0]["cleared_input_tokens"]}])
    );
    assert_eq!(body["thinking_drop_block"], false);
    // Every output answers a call kept before it.
    let calls: Vec<&Value> = out
        .iter()
        .filter(|i| i["type"] == "function_call")
        .map(|i| &i["call_id"])
        .collect();
    for o in out.iter().filter(|i| i["type"] == "function_call_output") {
        assert!(calls.contains(&&o["call_id"]), "orphaned output {o}");
    }
    let again = post(
        &app,
        "/v1/tokens",
        &json!({"instructions": body["instructions"], "input": out}),
    )
    .await;
    assert_eq!(again.status, 200, "{}", again.text());
}

#[tokio::test]
async fn unknown_items_and_parts_are_kept_and_estimated() {
    let app = app();
    let input = json!([
        {"role": "user", "content": [{"type": "input_text", "text": "find it"}, {"type": "x_future_part", "blob": "abc"}]},
        {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"type": "search", "query": "rust"}},
        {"type": "item_reference", "id": "msg_0"},
        {"type": "compaction", "id": "cmp_1", "encrypted_content": "gAAAA".repeat(40)},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "found", "annotations": []}]},
        {"type": "custom_tool_call", "call_id": "ct_1", "name": "apply_patch", "input": "*** Begin Patch"},
        {"type": "custom_tool_call_output", "call_id": "ct_1", "output": "done"},
        {"type": "message", "role": "user", "content": "thanks"}
    ]);
    let r = post(&app, "/v1/tokens", &json!({"input": input})).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let body = r.json();
    assert_eq!(body["exact"], false);
    // The compaction item (200 encrypted bytes, counted as bytes / 4) and
    // the web search item (its JSON) are counted, not zero.
    assert!(body["messages"][3]["tokens"].as_u64().unwrap() >= 50);
    assert!(body["messages"][1]["tokens"].as_u64().unwrap() > 10);

    // The compaction starts the conversation: forced compression keeps
    // every item up to it and summarizes only what follows.
    let r = post(
        &app,
        "/v1/compress",
        &json!({"input": input, "force": true, "config": {"min_recent_messages": 1}}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let out = r.json()["input"].as_array().unwrap().clone();
    assert_eq!(&out[..4], &input.as_array().unwrap()[..4]);
    assert!(
        out[4]["content"]
            .as_str()
            .unwrap()
            .starts_with("[Context Summary - 3 previous messages]")
    );
    assert_eq!(out.last().unwrap(), &input[7]);
}

#[tokio::test]
async fn responses_pairing_errors_name_the_item() {
    let app = app();
    let cases = [
        (
            json!([{"role": "user", "content": "hi"}, {"type": "function_call_output", "call_id": "nope", "output": "x"}]),
            "/input/1/call_id",
        ),
        (
            json!([
                {"type": "function_call", "call_id": "a", "name": "f", "arguments": "{}"},
                {"type": "message", "role": "user", "content": "and?"}
            ]),
            "/input/0/call_id",
        ),
        (
            json!([{"type": "function_call", "name": "f", "arguments": "{}"}]),
            "/input/0/call_id",
        ),
        (
            json!([{"type": "function_call_output", "call_id": "a"}]),
            "/input/0/output",
        ),
        (json!([{"role": "robot", "content": "x"}]), "/input/0/role"),
        (json!([{"role": "user"}]), "/input/0/content"),
        (
            json!([{"role": "user", "content": null}]),
            "/input/0/content",
        ),
        (json!([42]), "/input/0"),
        (json!(42), "/input"),
    ];
    for (input, pointer) in cases {
        let r = post(&app, "/v1/tokens", &json!({"input": input})).await;
        r.problem(422);
        assert!(
            r.pointers().contains(&pointer.to_string()),
            "{input}: {:?}",
            r.pointers()
        );
    }
    // Parallel calls and their outputs, in any order, are valid.
    let ok = json!([
        {"role": "user", "content": "go"},
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {"type": "function_call", "call_id": "a", "name": "f", "arguments": "{}"},
        {"type": "function_call", "call_id": "b", "name": "f", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "b", "output": "2"},
        {"type": "function_call_output", "call_id": "a", "output": [{"type": "input_text", "text": "1"}]}
    ]);
    let r = post(&app, "/v1/tokens", &json!({"input": ok})).await;
    assert_eq!(r.status, 200, "{}", r.text());
}

#[tokio::test]
async fn the_thread_fields_of_each_format_do_not_mix() {
    let app = app();
    let cases = [
        (
            json!({"messages": [{"role": "user", "content": "a"}], "input": "b"}),
            "/input",
        ),
        (
            json!({"messages": [{"role": "user", "content": "a"}], "instructions": "x"}),
            "/instructions",
        ),
        (json!({"input": "b", "system": "x"}), "/system"),
        (json!({"input": "b", "format": "anthropic"}), "/format"),
        (json!({"format": "responses"}), "/input"),
        (
            json!({"format": "responses", "messages": [{"role": "user", "content": "a"}]}),
            "/messages",
        ),
        (json!({"text": "a", "instructions": "x"}), "/text"),
    ];
    for path in ["/v1/tokens", "/v1/verdict", "/v1/compress"] {
        for (body, pointer) in &cases {
            if path != "/v1/tokens" && body.get("text").is_some() {
                continue;
            }
            let r = post(&app, path, body).await;
            r.problem(422);
            assert!(
                r.pointers().contains(&pointer.to_string()),
                "{path} {body}: {:?}",
                r.pointers()
            );
        }
    }
}

#[tokio::test]
async fn the_verdict_reads_a_responses_thread() {
    let app = app();
    let r = post(&app, "/v1/verdict", &responses("medium-02")).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let body = r.json();
    assert_eq!(body["format"], "responses");
    assert_eq!(body["should_summarize"], true);
}

/// OpenAI's settings items are instructions: `configuration_update` and
/// `additional_tools` anywhere come back byte for byte and in order, never
/// summarized; the conversation up to the provider's `compaction` (and the
/// settings the API put after it) stays first; the `compaction_trigger`
/// stays the final item. The kept turns' reasoning follows the summary
/// written now, so it goes (OpenAI would drop it), reported, and the call
/// it preceded loses its item `id` (the API refuses a call sent by id
/// without its reasoning).
#[tokio::test]
async fn settings_compaction_and_trigger_items_stay_in_place() {
    let app = app();
    let codex = json!({"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "You are Codex."}]});
    let Settings {
        input,
        config,
        tools,
        trigger,
    } = Settings::new(&[codex], 7);
    let r = post(
        &app,
        "/v1/compress",
        &json!({"input": input, "force": true, "summarizer": {"strategy": "heuristic"},
                "config": {"min_recent_messages": 4}}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let body = r.json();
    let out = body["input"].as_array().unwrap();
    // Up to the compaction and the settings after it: first, verbatim.
    assert_eq!(&out[..7], &input[..7]);
    assert!(
        out[7]["content"]
            .as_str()
            .unwrap()
            .starts_with("[Context Summary - ")
    );
    // The span's settings right after the summary, in order, then the tail.
    assert_eq!(out[8..10], [config, tools]);
    let fc = |k: usize| json!({"type": "function_call", "call_id": format!("call_{k}"), "name": "exec_command", "arguments": "{\"cmd\": \"ls\"}"});
    assert_eq!(out[10..], [fc(7), turn(7)[2].clone(), trigger]);
    assert_eq!(body["applied_edits"][0]["type"], "remove_stale_thinking");
    assert_eq!(body["applied_edits"][0]["removed_thinking_turns"], 1);
    assert_eq!(body["messages_dropped"], json!([input.len() - 4]));
}
