//! Issue 36: summaries extended round after round, as an agent's loop
//! extends them. Per iteration (an iteration per assistant turn): the
//! injection of each round starts with the previous one, byte for byte,
//! over 20 rounds on every example thread, and on large-04 the rolling
//! entry keeps every user request, error line and decision whole. Plain:
//! the same rounds append byte for byte too, in the bound, keeping the
//! previous items.
//!
//! `cargo test --test suite recall::rounds -- --nocapture` prints the figures.

use serde_json::{Value, json};

use condense::summarize::refolded;
use condense::thread::{self, RawThread};

use super::FIXTURES;
use super::measure::{LIMIT, tokens, written};

/// Rounds after the first.
const ROUNDS: usize = 20;
/// Iterations kept verbatim (the medium-03 measure).
const KEEP: usize = 5;

/// A thread's messages but the system prompt.
fn messages(name: &str) -> Vec<Value> {
    let path = format!("{}/data/threads/{name}.json", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("fixture readable");
    let thread: Value = serde_json::from_str(&text).expect("fixture is JSON");
    thread["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] != "system")
        .cloned()
        .collect()
}

/// An iteration per assistant message: the messages before it (since the
/// previous one's tool results) open it, its tool results close it. Each
/// message's iteration, from 1.
fn per_assistant_turn(messages: &[Value]) -> Vec<u64> {
    let mut it = 0;
    let mut opened = false;
    messages
        .iter()
        .map(|m| {
            if !opened && !results(m) {
                it += 1;
                opened = true;
            }
            if m["role"] == "assistant" {
                opened = false;
            }
            it.max(1)
        })
        .collect()
}

/// Whether `m` only carries tool results (OpenAI `tool`, Anthropic blocks).
fn results(m: &Value) -> bool {
    let blocks = m["content"]
        .as_array()
        .is_some_and(|c| !c.is_empty() && c.iter().all(|b| b["type"] == "tool_result"));
    m["role"] == "tool" || (m["role"] == "user" && blocks)
}

/// The messages of iterations `from..=to` of `messages` (cycled, iterations
/// numbered on), and their iterations.
fn iterations(messages: &[Value], from: u64, to: u64) -> (Vec<Value>, Vec<u64>) {
    let its = per_assistant_turn(messages);
    let n = *its.last().unwrap();
    let mut out = (Vec::new(), Vec::new());
    for pass in 0.. {
        let base = pass * n;
        if base >= to {
            break;
        }
        for (m, &i) in messages.iter().zip(&its) {
            if (from..=to).contains(&(base + i)) {
                out.0.push(m.clone());
                out.1.push(base + i);
            }
        }
    }
    out
}

/// The per-iteration injection (heuristic, o200k, `limit` tokens) of
/// `messages`, message `i` in iteration `its[i]`, extending `prior`, as the
/// compressor writes it.
fn injection(messages: &[Value], its: &[u64], prior: Option<&str>, limit: usize) -> String {
    written(&parsed(messages), Some(its), prior, limit)
}

/// `messages` parsed; one that opens with the agent's turn (an Anthropic
/// thread must open with the user's) is read after a user turn, left out.
fn parsed(messages: &[Value]) -> Vec<condense::thread::Message> {
    let parse = |messages: &[Value]| {
        thread::parse(RawThread {
            messages,
            ..Default::default()
        })
    };
    match parse(messages) {
        Ok(t) => t.messages,
        Err(_) => {
            let mut after = vec![json!({"role": "user", "content": "(earlier turns)"})];
            after.extend_from_slice(messages);
            let t = parse(&after).expect("a valid thread");
            t.messages[1..].to_vec()
        }
    }
}

/// The plain heuristic summary of `messages` extending `prior`, as the
/// compressor writes it (canonical span, o200k count).
/// The plain heuristic summary of `messages` extending `prior`, as the
/// compressor has it written (through the service: repaired, its receipt
/// taken), so the rounds test what production sends.
fn plain(messages: &[Value], prior: Option<&str>) -> String {
    written(&parsed(messages), None, prior, LIMIT)
}

/// One text of the thread (a string, or its text blocks), on one line.
fn text(m: &Value) -> String {
    let text = match &m["content"] {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join(" "),
        _ => String::new(),
    };
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Issue 36: on large-04 with an iteration per assistant turn, its 132 old
/// iterations under 2,000 tokens keep every user request, error line and
/// decision of theirs whole (before: 11 of 20 requests, 4 of 9 errors, 1
/// of 5 decisions, requests clipped to 60 characters in the rolling entry).
#[test]
fn large_04_keeps_every_request_error_line_and_decision_whole() {
    let facts: Value = serde_json::from_str(
        &std::fs::read_to_string(format!(
            "{}/tests/fixtures/facts/large-04.facts.json",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap(),
    )
    .unwrap();
    for name in ["large-04.openai", "large-04.anthropic"] {
        let all = messages(name);
        let (old, its) = iterations(&all, 1, 132);
        let injection = injection(&old, &its, None, LIMIT);
        let one_line = injection.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(tokens(&injection) <= LIMIT);
        // The user's requests, read from the thread.
        let mut requests: Vec<String> = old
            .iter()
            .filter(|m| m["role"] == "user" && !results(m))
            .map(text)
            .filter(|t| !t.is_empty())
            .collect();
        requests.sort();
        requests.dedup();
        // The planted error lines and decisions the old iterations say.
        let said = serde_json::to_string(&old).unwrap();
        let planted = |kind: &str| -> Vec<String> {
            facts[kind]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| f.as_str().unwrap().to_string())
                .filter(|f| {
                    let quoted = serde_json::to_string(f).unwrap();
                    said.contains(&quoted[1..quoted.len() - 1])
                })
                .collect()
        };
        let (errors, decisions) = (planted("errors"), planted("decisions"));
        let lost = |items: &[String]| -> Vec<String> {
            items
                .iter()
                .filter(|i| !one_line.contains(i.as_str()))
                .cloned()
                .collect()
        };
        println!(
            "{name}: {} tokens; requests {}/{}, error lines {}/{}, decisions {}/{}",
            tokens(&injection),
            requests.len() - lost(&requests).len(),
            requests.len(),
            errors.len() - lost(&errors).len(),
            errors.len(),
            decisions.len() - lost(&decisions).len(),
            decisions.len()
        );
        assert_eq!(
            (requests.len(), errors.len(), decisions.len()),
            (20, 9, 5),
            "{name}: the facts are said in the old iterations"
        );
        assert!(
            lost(&requests).is_empty(),
            "{name}: {:?}\n{injection}",
            lost(&requests)
        );
        assert!(
            lost(&errors).is_empty(),
            "{name}: {:?}\n{injection}",
            lost(&errors)
        );
        assert!(
            lost(&decisions).is_empty(),
            "{name}: {:?}\n{injection}",
            lost(&decisions)
        );
        assert!(injection.contains("- Earlier iterations 1–"), "{injection}");
    }
}

/// Issue 36: from the first round on, a per-iteration injection leaves
/// room, so the next 20 rounds (an iteration each, as an agent's loop
/// compresses) each extend the previous injection byte for byte, on every
/// example thread (cycled where it has fewer iterations).
#[test]
fn per_iteration_rounds_extend_byte_for_byte() {
    for name in FIXTURES {
        let all = messages(name);
        let n = *per_assistant_turn(&all).last().unwrap();
        let old = n.saturating_sub(KEEP as u64).max(1);
        let (span, its) = iterations(&all, 1, old);
        let mut previous = injection(&span, &its, None, LIMIT);
        let first = tokens(&previous);
        for round in 1..=ROUNDS as u64 {
            let (span, its) = iterations(&all, old + round, old + round);
            let next = injection(&span, &its, Some(&previous), LIMIT);
            assert!(tokens(&next) <= LIMIT, "{name}, round {round}");
            assert!(
                next.starts_with(&previous) && !refolded(&previous, &next),
                "{name}, round {round}: re-folded\n{previous}\n----\n{next}"
            );
            previous = next;
        }
        println!(
            "{name}: {n} iterations, {old} old: first round {first} tokens, after {ROUNDS} rounds {}",
            tokens(&previous)
        );
    }
}

/// Plain mode, the same rounds: each round appends what its span says
/// under `### Since then`, so its summary starts with the previous one byte
/// for byte (the provider's prompt cache keeps hitting), on every example
/// thread; each round stays in its bound and drops no item the previous
/// summary kept. A first summary leaves 20 addenda at their least free:
/// large-04's takes 1,779 of 2,000 tokens (before: 1,998, so 7 of its 20
/// rounds re-folded).
#[test]
fn plain_rounds_extend_byte_for_byte() {
    for name in FIXTURES {
        let all = messages(name);
        let n = *per_assistant_turn(&all).last().unwrap();
        let old = n.saturating_sub(KEEP as u64).max(1);
        let (span, _) = iterations(&all, 1, old);
        let mut previous = plain(&span, None);
        let first = tokens(&previous);
        let (mut lost, mut appended) = (0, 0);
        for round in 1..=ROUNDS as u64 {
            let (span, _) = iterations(&all, old + round, old + round);
            let next = plain(&span, Some(&previous));
            assert!(tokens(&next) <= LIMIT, "{name}, round {round}");
            let appends = next.starts_with(&previous) && !refolded(&previous, &next);
            appended += usize::from(appends);
            assert!(
                appends,
                "{name}, round {round}: re-folded\n{previous}\n----\n{next}"
            );
            lost += previous
                .lines()
                .filter(|l| l.starts_with("- ") && !l.starts_with("- (") && !next.contains(*l))
                .count();
            previous = next;
        }
        println!(
            "{name}, plain: first round {first} tokens, after {ROUNDS} rounds {}; appended {appended}/{ROUNDS}; items lost {lost}",
            tokens(&previous)
        );
        assert_eq!(lost, 0, "{name}");
    }
}

/// Plain mode through `/v1/compress`, the summary carried in the thread as
/// an agent sends it back: each round that appends says nothing, and one
/// whose bound is spent re-folds and says so (the warning per-iteration
/// injections give, `…forced a re-fold…`), so the caller knows its prompt
/// cache misses from there.
#[tokio::test]
async fn a_plain_re_fold_is_reported() {
    let app = crate::support::common::app();
    let body = |messages: &[Value]| {
        json!({"messages": messages, "force": true, "summarizer": {"strategy": "heuristic"},
               "config": {"max_summary_tokens": 300, "min_recent_messages": 2}})
    };
    let turn = |i: usize| {
        [
            json!({"role": "user", "content": format!("Fix bug {i} in src/module_{i}.rs; never touch tests/case_{i}.rs.")}),
            json!({"role": "assistant", "content": format!("Bug {i} is fixed: the check in src/module_{i}.rs now runs before the cast, and release {i}.0.{i} notes it.")}),
        ]
    };
    let mut messages = vec![json!({"role": "system", "content": "You are a coding agent."})];
    (1..=6).for_each(|i| messages.extend(turn(i)));
    let mut out = post_compress(&app, &body(&messages)).await;
    let mut previous = out["summary"]["content"].as_str().unwrap().to_string();
    let (mut appended, mut refolds) = (0, 0);
    for i in 7..=30 {
        let mut messages = out["messages"].as_array().unwrap().clone();
        messages.extend(turn(i));
        out = post_compress(&app, &body(&messages)).await;
        let content = out["summary"]["content"].as_str().unwrap().to_string();
        let warned = out["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().contains("forced a re-fold"));
        let appends = content.starts_with(previous.trim_end());
        assert_eq!(
            warned, !appends,
            "round {i}: {}\n{previous}\n----\n{content}",
            out["warnings"]
        );
        if appends {
            appended += 1;
        } else {
            refolds += 1;
        }
        previous = content;
    }
    println!("plain through /v1/compress, 300 tokens: appended {appended}, re-folded {refolds}");
    assert!(refolds >= 1, "the bound was reached");
    assert!(
        appended > refolds,
        "{appended} appended, {refolds} re-folded"
    );
}

async fn post_compress(app: &axum::Router, body: &Value) -> Value {
    let r = crate::support::common::post(app, "/v1/compress", body).await;
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()
}
