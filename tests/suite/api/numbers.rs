//! Numbers go back as the client wrote them (issue 38): a kept message is
//! echoed by `/v1/compress` with its numbers' text, not as an `f64` wrote it
//! (`123456789012345678901234567890` once came back `1.2345678901234568e+29`).
//! The bodies are written as text: `json!` would make numbers of Rust literals.

use serde_json::Value;

use crate::support::common::{app, post_raw};

/// Numbers an `f64` would change, as written; the one difference serde_json
/// makes is an exponent's spelling (`1e5` and `1E5` go back `1e+5`, the same value).
const WRITTEN: &str =
    "[123456789012345678901234567890, -1e400, 1.10, 1e5, 1E-7, 0.1, -0, 18446744073709551616, 7]";
const ECHOED: &str =
    "[123456789012345678901234567890,-1e+400,1.10,1e+5,1e-7,0.1,-0,18446744073709551616,7]";

/// `n` short user/assistant turns as JSON text, then `last` (text).
fn thread_text(n: usize, last: &str) -> String {
    let mut messages: Vec<String> = (0..n)
        .map(|i| {
            let role = if i % 2 == 0 { "user" } else { "assistant" };
            format!(r#"{{"role": "{role}", "content": "message number {i} about src/m{i}.rs"}}"#)
        })
        .collect();
    messages.push(last.to_string());
    format!("[{}]", messages.join(", "))
}

async fn compress(app: &axum::Router, body: String) -> (Value, String) {
    let r = post_raw(app, "/v1/compress", "application/json", body).await;
    assert_eq!(r.status, 200, "{}", r.text());
    (r.json(), r.text())
}

#[tokio::test]
async fn a_kept_message_is_echoed_with_its_numbers_as_written() {
    let app = app();
    let last =
        format!(r#"{{"role": "user", "content": "the readings", "metadata": {{"n": {WRITTEN}}}}}"#);
    for (n, force) in [(3, false), (60, true)] {
        let body = format!(
            r#"{{"model": "gpt-4o", "force": {force}, "messages": {}}}"#,
            thread_text(n, &last)
        );
        let (out, text) = compress(&app, body).await;
        assert_eq!(out["compressed"], force, "{text}");
        let kept = out["messages"].as_array().unwrap().last().unwrap();
        assert_eq!(kept["content"], "the readings");
        assert!(
            text.contains(&format!(r#""metadata":{{"n":{ECHOED}}}"#)),
            "{text}"
        );
    }
}

/// An Anthropic thread whose newest turn is a tool use with `numbers` in its input.
fn anthropic(numbers: &str, force: bool) -> String {
    let turn = format!(
        r#"{{"role": "assistant", "content": [{{"type": "tool_use", "id": "t1", "name": "plot", "input": {{"points": {numbers}}}}}]}},
        {{"role": "user", "content": [{{"type": "tool_result", "tool_use_id": "t1", "content": "plotted"}}]}}"#
    );
    let force = if force { r#""force": true, "# } else { "" };
    format!(
        r#"{{"model": "claude-sonnet-4-5", "format": "anthropic", "system": "s", {force}"messages": {}}}"#,
        thread_text(60, &turn)
    )
}

#[tokio::test]
async fn an_anthropic_tool_input_keeps_its_numbers() {
    let (out, text) = compress(&app(), anthropic(WRITTEN, true)).await;
    assert_eq!(out["compressed"], true, "{text}");
    assert!(
        text.contains(&format!(r#""input":{{"points":{ECHOED}}}"#)),
        "{text}"
    );
}

#[tokio::test]
async fn ordinary_numbers_count_as_they_did() {
    // Integers and floats in their shortest form read the same as text or as
    // f64s: a tool input holding them counts what it counted before numbers
    // were kept as written (and so do the golden threads, `api::golden`).
    let ordinary = "[1, 2, 30, -4, 0.5, 2.25, 1000000, 18446744073709551615]";
    let r = post_raw(
        &app(),
        "/v1/tokens",
        "application/json",
        anthropic(ordinary, false),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["total_tokens"], ORDINARY_TOKENS, "{}", r.text());
}

/// `/v1/tokens` of the ordinary-numbers thread, as counted before numbers were kept.
const ORDINARY_TOKENS: u64 = 1093;
