//! Every tool-call kind and block the providers accept: Chat Completions
//! `custom` tool calls, Anthropic server-side tool blocks, `search_result`
//! and `document` blocks, and the providers' own compaction. Kept verbatim,
//! never split from their partner, counted as estimates.

use serde_json::{Value, json};

use crate::support::common::{app, post};

fn custom_call(id: &str) -> Value {
    json!({"id": id, "type": "custom", "custom": {"name": "apply_patch", "input": "*** Begin Patch\n*** End Patch"}})
}

#[tokio::test]
async fn chat_custom_tool_calls_pair_with_their_results() {
    let app = app();
    let messages = json!([
        {"role": "user", "content": "patch it"},
        {"role": "assistant", "content": null, "tool_calls": [custom_call("c1")]},
        {"role": "tool", "tool_call_id": "c1", "content": "applied"},
        {"role": "assistant", "content": "done"}
    ]);
    let r = post(&app, "/v1/tokens", &json!({"messages": messages})).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let body = r.json();
    assert_eq!(body["exact"], false, "a tool call is an estimate");
    // The call's input is counted: more than the framing alone.
    assert!(body["messages"][1]["tokens"].as_u64().unwrap() > 10);

    // Unanswered before the next message: refused like a function call.
    let r = post(
        &app,
        "/v1/tokens",
        &json!({"messages": [
            {"role": "assistant", "content": null, "tool_calls": [custom_call("c1")]},
            {"role": "user", "content": "and?"}
        ]}),
    )
    .await;
    r.problem(422);
    assert_eq!(r.pointers(), ["/messages/0/tool_calls/0/id"]);

    // A custom call without its `custom` object names the field.
    let r = post(
        &app,
        "/v1/tokens",
        &json!({"messages": [{"role": "assistant", "content": null, "tool_calls": [{"id": "c", "type": "custom"}]}]}),
    )
    .await;
    r.problem(422);
    assert_eq!(r.pointers(), ["/messages/0/tool_calls/0/custom"]);
}

fn server_turn() -> Value {
    json!({"role": "assistant", "content": [
        {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "tokio 1.54 changelog"}},
        {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": [
            {"type": "web_search_result", "url": "https://tokio.rs/blog", "title": "Tokio", "encrypted_content": "EqQBCioIARgBIiQ", "page_age": null}
        ]},
        {"type": "text", "text": "Tokio 1.54 changed the scheduler.", "citations": null}
    ]})
}

#[tokio::test]
async fn anthropic_server_blocks_are_kept_and_estimated() {
    let app = app();
    let messages = json!([
        {"role": "user", "content": [
            {"type": "text", "text": "What changed in tokio?"},
            {"type": "search_result", "source": "https://docs.rs/tokio", "title": "tokio docs", "content": [{"type": "text", "text": "The runtime."}], "citations": {"enabled": true}},
            {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "notes"}}
        ]},
        server_turn(),
        {"role": "user", "content": "thanks"}
    ]);
    // Detected as Anthropic from its blocks alone.
    let r = post(&app, "/v1/tokens", &json!({"messages": messages})).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let body = r.json();
    assert_eq!(body["format"], "anthropic");
    assert_eq!(body["exact"], false);
    assert!(body["messages"][1]["tokens"].as_u64().unwrap() > 30);
}

/// Compression keeps a server tool's use and its result together, byte for
/// byte, and an Anthropic compaction block pins everything up to it.
#[tokio::test]
async fn compression_keeps_server_blocks_whole_and_starts_after_compaction() {
    let app = app();
    let mut messages = vec![
        json!({"role": "user", "content": "start"}),
        json!({"role": "assistant", "content": [
            {"type": "compaction", "content": "Summary of the session so far: the user works on tokio."},
            {"type": "text", "text": "Continuing."}
        ]}),
    ];
    for i in 0..12 {
        messages.push(json!({"role": "user", "content": format!("question {i}")}));
        messages.push(server_turn());
    }
    let r = post(
        &app,
        "/v1/compress",
        &json!({"messages": messages, "force": true, "config": {"min_recent_messages": 4}}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let body = r.json();
    let out = body["messages"].as_array().unwrap();
    // Everything up to the compaction block stays, the summary follows it.
    assert_eq!(&out[..2], &messages[..2]);
    assert!(
        out[2]["content"]
            .as_str()
            .unwrap()
            .starts_with("[Context Summary - ")
    );
    assert_eq!(body["summary"]["first_message_idx"], 2);
    // Every kept server turn is the caller's, value for value.
    for m in &out[3..] {
        assert!(messages.contains(m), "changed: {m}");
    }
    assert_eq!(out.last().unwrap(), messages.last().unwrap());

    // The verdict counts messages since the compaction only.
    let r = post(
        &app,
        "/v1/verdict",
        &json!({"messages": messages, "config": {"max_messages_before_summary": 30}}),
    )
    .await;
    assert_eq!(r.json()["messages_since_summary"], 24);
}
