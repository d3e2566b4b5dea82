use serde_json::{Value, json};

use super::*;
use crate::summarize::canonical;
use crate::thread::{RawThread, parse};

pub(crate) fn span(messages: &[Value]) -> Vec<Message> {
    let t = parse(RawThread {
        messages,
        ..Default::default()
    })
    .unwrap();
    canonical(&t.messages)
}

pub(crate) fn sample() -> Vec<Message> {
    span(&[
        json!({"role": "user", "content": "Fix the flaky test in src/net/retry.rs. Never push to main. Ask Priya, she wrote it on 2025-03-14."}),
        json!({"role": "assistant", "content": "I'll run it; see https://ci.example.com/runs/4411 and `RetryPolicy::backoff` (v0.13.5).", "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "shell", "arguments": "{\"command\": \"cargo test -p net\"}"}},
            {"id": "b", "type": "function", "function": {"name": "shell", "arguments": "{\"command\": \"git status\"}"}}
        ]}),
        json!({"role": "tool", "tool_call_id": "a", "content": "error[E0599]: no method named `jitter`\n --> src/net/retry.rs:88:9\nexit status: 101"}),
        json!({"role": "tool", "tool_call_id": "b", "content": "clean\nexit status: 0"}),
        json!({"role": "user", "content": "Continue."}),
    ])
}

fn of(a: &Anchors, kind: Kind) -> Vec<&str> {
    a.items
        .iter()
        .filter(|x| x.kind == kind)
        .map(|x| x.item.as_str())
        .collect()
}

#[test]
fn each_kind_is_found() {
    let a = anchors(&sample());
    assert_eq!(of(&a, Kind::Request).len(), 2, "{a:#?}");
    assert!(of(&a, Kind::Request)[0].starts_with("\"Fix the flaky test"));
    assert_eq!(of(&a, Kind::Instruction), ["\"Never push to main.\""]);
    assert_eq!(
        of(&a, Kind::Error),
        ["error[E0599]: no method named `jitter`"]
    );
    assert_eq!(
        of(&a, Kind::FailedCommand),
        ["`cargo test -p net` (exit status 101)"]
    );
    assert_eq!(of(&a, Kind::Command), ["`git status`"]);
    assert_eq!(of(&a, Kind::Path), ["src/net/retry.rs"]);
    assert_eq!(of(&a, Kind::Url), ["https://ci.example.com/runs/4411"]);
    let ids = of(&a, Kind::Identifier);
    assert!(ids.contains(&"`RetryPolicy::backoff`"), "{ids:?}");
    assert_eq!(of(&a, Kind::Date), ["2025-03-14"]);
    let numbers = of(&a, Kind::Number);
    assert!(
        numbers.contains(&"0.13.5") && numbers.contains(&"4411"),
        "{numbers:?}"
    );
    assert_eq!(of(&a, Kind::Name), ["Priya"]);
    assert_eq!(a.left_out, 0);
}

#[test]
fn a_calls_urls_are_its_one_line_values_decoded() {
    let call = |name: &str, args: Value| json!({"id": name, "type": "function", "function": {"name": name, "arguments": args.to_string()}});
    let s = span(&[
        json!({"role": "user", "content": "Vendor the crate."}),
        json!({"role": "assistant", "content": null, "tool_calls": [
            call("fetch", json!({"url": "https://docs.rs/bit-set/0.8.0"})),
            call("shell", json!({"command": "curl -sL https://crates.io/api/v1/crates/bit-set"})),
            // A file's body: its licence header is the file's, not the agent's.
            call("write_file", json!({"path": "src/lib.rs", "content":
                "// Licensed under <http://www.apache.org/licenses/LICENSE-2.0>\n// see http://rust-lang.org/COPYRIGHT.\nfn main() {}\n"})),
        ]}),
    ]);
    assert_eq!(
        of(&anchors(&s), Kind::Url),
        [
            "https://docs.rs/bit-set/0.8.0",
            "https://crates.io/api/v1/crates/bit-set"
        ]
    );
}

#[test]
fn most_important_kinds_come_first() {
    let a = anchors(&sample());
    let kinds: Vec<Kind> = a.items.iter().map(|x| x.kind).collect();
    let mut sorted = kinds.clone();
    sorted.sort();
    assert_eq!(kinds, sorted);
    // The table of caps is indexed by the kind's order.
    for (i, (kind, _)) in KINDS.iter().enumerate() {
        assert_eq!(*kind as usize, i);
    }
    assert_eq!(KINDS.iter().map(|k| k.1).sum::<usize>(), MAX_ANCHORS);
}

#[test]
fn counts_are_capped_and_what_is_left_out_is_counted() {
    let mut messages = vec![json!({"role": "user", "content": "The task: port the parser."})];
    for i in 0..500 {
        messages.push(json!({"role": "user", "content": format!("Request number {i} of many, about dir{i}/file{i}.rs and `id_{i}`")}));
    }
    let a = anchors(&span(&messages));
    assert!(a.items.len() <= MAX_ANCHORS);
    assert_eq!(of(&a, Kind::Request).len(), 24);
    // The first request is the task, kept; the newest follow.
    assert!(of(&a, Kind::Request)[0].contains("The task"));
    assert!(of(&a, Kind::Request)[23].contains("number 499"));
    assert!(a.left_out > 1000, "{}", a.left_out);
}

#[test]
fn it_is_deterministic_and_linear_on_hostile_input() {
    // Long runs that make backtracking engines explode.
    let hostile = format!(
        "{} {} {}",
        "a_".repeat(50_000),
        "1.".repeat(50_000),
        "https://x/".repeat(5_000)
    );
    let s = span(&[json!({"role": "user", "content": hostile})]);
    let a = anchors(&s);
    assert_eq!(a, anchors(&s));
    assert!(a.items.len() <= MAX_ANCHORS);
}

#[test]
fn normal_forms() {
    assert_eq!(folded("  Cargo   TEST\n -p  x "), "cargo test -p x");
    assert_eq!(significant("Don't  push, OK?"), "dontpushok");
    let rules: Vec<&str> = sentences("Do it. Always use tabs! ok?\nnever x")
        .filter(|s| RULE.get().is_match(s))
        .collect();
    assert_eq!(rules, ["Always use tabs!", "never x"]);
}
