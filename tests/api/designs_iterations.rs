//! The per-iteration designs condense replaces, through the API: SPEC-08
//! (every old iteration summarized in a few sentences, joined into a context
//! injection) and um_agent_coder (the oldest iterations folded into a
//! rolling summary that each round extends; each kept iteration's output
//! cut to 5,000 characters and its prompt to 500).

use serde_json::{Value, json};

use crate::common::{app, fixture, post, thread};

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

/// large-04 with an iteration per assistant message (the user turns before
/// it open the iteration): 134 iterations, 132 old ones with
/// `keep_recent_iterations: 2`.
fn large_by_assistant_turn() -> Value {
    let mut t = thread("large-04.openai");
    let messages = t["messages"].as_array_mut().unwrap();
    let mut it = 0;
    let mut opened = false;
    for m in messages.iter_mut().skip(1) {
        let role = m["role"].as_str().unwrap().to_string();
        if !opened && (role == "user" || role == "assistant") {
            it += 1;
            m["metadata"] = json!({"iteration": it});
            opened = true;
        }
        if role == "assistant" {
            opened = false;
        }
    }
    t
}

/// The facts of `kind` planted in the old iterations (`messages[..cut]`)
/// and how many of them the injection holds, whole.
fn survivors(kind: &str, old: &[Value], injection: &str) -> (usize, usize) {
    let facts = fixture("threads/large-04.facts.json");
    let old_text = serde_json::to_string(old).unwrap();
    let planted: Vec<&str> = facts[kind]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .filter(|f| old_text.contains(&serde_json::to_string(f).unwrap()[1..f.len()]))
        .collect();
    let kept = planted.iter().filter(|f| injection.contains(*f)).count();
    (kept, planted.len())
}

/// The figures of issue 23 on the 132-iteration thread: how many user
/// requests, commands and error lines of the old iterations survive.
#[tokio::test]
async fn the_132_iteration_thread_keeps_the_facts_of_its_old_iterations() {
    let app = app();
    let t = large_by_assistant_turn();
    let body = json!({"messages": t["messages"], "tools": t["tools"], "model": t["model"],
                      "force": true, "group_by": "iteration", "keep_recent_iterations": 2,
                      "summarizer": {"strategy": "heuristic"}});
    let r = post(&app, "/v1/compress", &body).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let out = r.json();
    let injection = out["context_injection"].as_str().unwrap();
    let all = t["messages"].as_array().unwrap();
    let kept = out["messages"].as_array().unwrap();
    let old = &all[..all.len() - (kept.len() - 2)];
    let its = all.iter().filter(|m| !m["metadata"].is_null()).count();
    let (requests, commands, errors) = (
        survivors("user_messages", old, injection),
        survivors("commands", old, injection),
        survivors("errors", old, injection),
    );
    println!(
        "{its} iterations, {} listed one by one: user requests {}/{}, commands {}/{}, error lines {}/{}",
        out["summaries"].as_array().unwrap().len(),
        requests.0,
        requests.1,
        commands.0,
        commands.1,
        errors.0,
        errors.1
    );
    // Before the rolling entry (newest 42 listed, the rest left out): 3/20,
    // 8/10, 4/9. Now every old iteration is in the injection.
    assert!(injection.contains("- Earlier iterations 1–"), "{injection}");
    assert!(!injection.contains("left out"), "{injection}");
    assert_eq!(requests.0, requests.1, "{injection}");
    assert_eq!(commands.0, commands.1, "{injection}");
    assert_eq!(errors.0, errors.1, "{injection}");
    assert!(
        requests.1 == 20 && errors.1 == 9,
        "the facts are planted in the old span"
    );
}
