//! The per-iteration designs condense replaces, through the API: SPEC-08
//! (every old iteration summarized in a few sentences, joined into a context
//! injection) and um_agent_coder (the oldest iterations folded into a
//! rolling summary that each round extends; each kept iteration's output
//! cut to 5,000 characters and its prompt to 500).

use serde_json::{Value, json};

use crate::support::common::{app, fixture, post, thread};

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
    let facts = fixture("facts/large-04.facts.json");
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

/// An iteration of agent work: a request, a command that fails, its output.
fn iteration(i: u64) -> Vec<Value> {
    let call = json!({"id": format!("c{i}"), "type": "function", "function": {"name": "shell",
                      "arguments": json!({"command": format!("cargo test -p crate{i}")}).to_string()}});
    vec![
        json!({"role": "user", "content": format!("Fix bug {i}."), "metadata": {"iteration": i}}),
        json!({"role": "assistant", "content": null, "tool_calls": [call]}),
        json!({"role": "tool", "tool_call_id": format!("c{i}"),
               "content": format!("error[E{i:04}]: bug {i} is still there\nexit status: 101")}),
        json!({"role": "assistant", "content": format!("Iteration {i} ends with the bug still open.")}),
    ]
}

fn iterations(range: std::ops::RangeInclusive<u64>) -> Vec<Value> {
    range.flat_map(iteration).collect()
}

async fn compressed(app: &axum::Router, body: &Value) -> Value {
    let r = post(app, "/v1/compress", body).await;
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()
}

/// SPEC-08: every old iteration summarized, however many: 117 old ones
/// under the default bound, each with its request in the injection (as an
/// entry of its own, or inside the rolling entry).
#[tokio::test]
async fn spec_08_summarizes_every_one_of_a_hundred_old_iterations() {
    let app = app();
    let mut messages = vec![json!({"role": "system", "content": "You are a coding agent."})];
    messages.extend(iterations(1..=120));
    let body = json!({"messages": messages, "force": true, "group_by": "iteration",
                      "keep_recent_iterations": 3, "summarizer": {"strategy": "heuristic"}});
    let out = compressed(&app, &body).await;
    let injection = out["context_injection"].as_str().unwrap();
    let n = post(&app, "/v1/tokens", &json!({"text": injection}))
        .await
        .json()["total_tokens"]
        .as_u64()
        .unwrap();
    assert!(n <= 2000, "{n} tokens");
    let list = out["summaries"].as_array().unwrap();
    assert_eq!(list[0]["first_iteration"], 1, "{injection}");
    assert_eq!(list.last().unwrap()["iteration"], 117, "{injection}");
    for i in 1..=117 {
        assert!(
            injection.contains(&format!("\"Fix bug {i}.\"")),
            "iteration {i} is not represented: {injection}"
        );
    }
    // The newest old ones keep their failing command and error whole.
    assert!(injection.contains("- Iteration 117: The user asked \"Fix bug 117.\"."));
    assert!(injection.contains("`cargo test -p crate117` (exit status 101)"));
    assert!(!injection.contains("left out"), "{injection}");
}

/// um_agent_coder: each round's injection is the previous one plus the new
/// iterations, byte for byte, until the bound forces a re-fold (then a
/// warning says so, and the oldest are folded, not dropped).
#[tokio::test]
async fn um_agent_coder_rounds_extend_the_previous_injection() {
    let app = app();
    let body = |messages: &[Value]| {
        json!({"messages": messages, "force": true, "group_by": "iteration",
               "keep_recent_iterations": 1, "summarizer": {"strategy": "heuristic"},
               "config": {"max_summary_tokens": 600}})
    };
    let refold = |out: &Value| {
        out["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().contains("re-fold"))
    };
    let mut messages = vec![json!({"role": "system", "content": "You are a coding agent."})];
    messages.extend(iterations(1..=3));
    let mut out = compressed(&app, &body(&messages)).await;
    let mut previous = out["context_injection"].as_str().unwrap().to_string();
    assert!(!refold(&out), "{}", out["warnings"]);
    let (mut appended, mut refolds) = (0, 0);
    // Enough rounds to reach the bound: a list leaves room for 20 (issue 36).
    for round in 0..30 {
        let next = 4 + round;
        let mut messages = out["messages"].as_array().unwrap().clone();
        messages.extend(iteration(next));
        out = compressed(&app, &body(&messages)).await;
        let injection = out["context_injection"].as_str().unwrap().to_string();
        let extends = injection.starts_with(&previous);
        assert_eq!(refold(&out), !extends, "round {round}: {}", out["warnings"]);
        if extends {
            appended += 1;
            // The previous bytes, then the iteration that became old.
            assert!(
                injection[previous.len()..]
                    .starts_with(&format!("\n- Iteration {}: The user asked", next - 1)),
                "{injection}"
            );
        } else {
            refolds += 1;
            assert!(injection.contains("- Earlier iterations 1–"), "{injection}");
        }
        for i in 1..next {
            assert!(
                injection.contains(&format!("\"Fix bug {i}.\"")),
                "round {round}: iteration {i} lost: {injection}"
            );
        }
        previous = injection;
    }
    // Most rounds only append; the re-folds leave room for the next ones.
    assert!(refolds >= 1, "the bound was reached");
    assert!(
        appended > 2 * refolds,
        "{appended} appended, {refolds} re-folded"
    );
}
