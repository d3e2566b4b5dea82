//! The per-iteration designs condense replaces, through the API: SPEC-08
//! (every old iteration summarized in a few sentences, joined into a context
//! injection) and um_agent_coder (the oldest iterations folded into a
//! rolling summary that each round extends; each kept iteration's output
//! cut to 5,000 characters and its prompt to 500).

use serde_json::json;

use crate::common::{app, post};

/// um_agent_coder's raw window: prompts cut to 500 characters, outputs
/// (the agent's own text and its tool results) to 5,000.
#[tokio::test]
async fn um_agent_coder_cuts_outputs_to_5000_and_prompts_to_500() {
    let app = app();
    let output = "The agent reports. ".repeat(20_400 / 19 + 1);
    let output: String = output.chars().take(20_400).collect();
    let prompt = "Please fix it. ".repeat(100);
    let messages = json!([
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": prompt, "metadata": {"iteration": 1}},
        {"role": "assistant", "content": output},
        {"role": "user", "content": "Next.", "metadata": {"iteration": 2}},
        {"role": "assistant", "content": "Short."},
    ]);
    let config = json!({"max_user_message_chars": 500, "max_assistant_message_chars": 5000,
                        "max_tool_result_chars": 5000, "max_messages_before_summary": 1000});
    let body = json!({"messages": messages, "config": config});
    let out = post(&app, "/v1/compress", &body).await;
    assert_eq!(out.status, 200, "{}", out.text());
    let out = out.json();
    assert_eq!(out["reason"], "rules", "{out}");
    assert_eq!(out["messages_truncated"], json!([1, 2]));
    let m = out["messages"].as_array().unwrap();
    let chars = |i: usize| m[i]["content"].as_str().unwrap().chars().count();
    assert_eq!(
        chars(2),
        5000,
        "the 20,400-character output comes back at 5,000"
    );
    assert_eq!(chars(1), 500);
    assert_eq!(m[0], messages[0], "the system prompt is never cut");
    assert_eq!(m[3..], messages.as_array().unwrap()[3..]);
    assert!(
        m[2]["content"].as_str().unwrap().contains("…[truncated"),
        "{}",
        m[2]["content"]
    );
    // Without the assistant rule the output comes back whole.
    let body = json!({"messages": messages,
                      "config": {"max_user_message_chars": 500, "max_messages_before_summary": 1000}});
    let out = post(&app, "/v1/compress", &body).await.json();
    assert_eq!(out["messages"][2], messages[2]);
    // Anthropic text blocks too; the thinking block is never cut.
    let anthropic = json!([
        {"role": "user", "content": "Go."},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "x".repeat(6000), "signature": "sig"},
            {"type": "text", "text": output}
        ]},
        {"role": "user", "content": "Next."},
    ]);
    let body = json!({"messages": anthropic, "format": "anthropic",
                      "config": {"max_assistant_message_chars": 5000, "max_messages_before_summary": 1000}});
    let out = post(&app, "/v1/compress", &body).await;
    assert_eq!(out.status, 200, "{}", out.text());
    let out = out.json();
    let blocks = out["messages"][1]["content"].as_array().unwrap();
    assert_eq!(blocks[0], anthropic[1]["content"][0]);
    assert_eq!(blocks[1]["text"].as_str().unwrap().chars().count(), 5000);
}
