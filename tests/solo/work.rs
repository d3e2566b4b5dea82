//! Compression does work linear in the thread: it tokenizes each message
//! about once, however many tail units fitting drops or texts it cuts.
//! Measured in bytes tokenized (a counter, not a clock), so the check holds
//! on a loaded machine. In `tests/solo/`: the counter is per process.

use serde_json::{Value, json};

use condense::compress::{Compression, Compressor, Outcome};
use condense::policy::Profile;
use condense::summarize::Strategy;
use condense::thread::{self, RawThread, Thread};
use condense::tokens::{CountSpec, Encoders, Method, ModelRegistry, tokenized_bytes};

fn fixture(name: &str) -> Value {
    let path = format!("{}/data/threads/{name}.json", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

fn parse(body: &Value) -> Thread {
    thread::parse(RawThread {
        messages: body["messages"].as_array().unwrap(),
        system: body.get("system"),
        tools: body.get("tools"),
        ..Default::default()
    })
    .unwrap()
}

/// Bytes one full count of `t` tokenizes.
fn one_count(t: &Thread) -> u64 {
    let spec = CountSpec::resolve(
        &ModelRegistry::embedded(),
        "gpt-4o",
        Some("gpt-4o"),
        None,
        Method::Bpe,
    );
    let before = tokenized_bytes();
    spec.counter(Encoders::global()).thread(t);
    tokenized_bytes() - before
}

fn compress(t: Thread, profile: Profile) -> (Outcome, u64) {
    let before = tokenized_bytes();
    let req = Compression {
        model: Some("gpt-4o".into()),
        strategy: Strategy::Heuristic,
        force: true,
        ..Compression::new(t, profile)
    };
    let out = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(Compressor::offline().run(req))
        .unwrap();
    (out, tokenized_bytes() - before)
}

/// `units` tool rounds of one call and a short result each, then a user turn.
fn many_units(units: usize) -> Thread {
    let mut messages = vec![json!({"role": "user", "content": "start the long task"})];
    for i in 0..units {
        let id = format!("call_{i}");
        messages.push(json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": id, "type": "function", "function": {"name": "read_file", "arguments": format!("{{\"path\": \"src/f{i}.rs\"}}")}}
        ]}));
        messages.push(json!({"role": "tool", "tool_call_id": id, "content": format!("fn f{i}() {{ let x = {i}; }}")}));
    }
    messages.push(json!({"role": "user", "content": "and now?"}));
    parse(&json!({"messages": messages}))
}

#[test]
fn compression_tokenizes_each_message_about_once() {
    let _process = crate::alone_blocking();
    // The largest shared thread, both formats, with room to spare.
    for name in ["large-04.openai", "large-04.anthropic"] {
        let t = parse(&fixture(name));
        let once = one_count(&t);
        let (out, work) = compress(t, Profile::default());
        assert!(out.compressed);
        assert!(
            work <= once * 3 / 2,
            "{name}: {work} bytes tokenized for a thread of {once}"
        );
    }

    // A tail of 3,000 units that must be dropped one by one to fit: the old
    // fitting re-tokenized the whole draft per dropped unit (quadratic).
    let t = many_units(3_000);
    let once = one_count(&t);
    let profile = Profile {
        min_recent_messages: 6_000,
        context_window: Some(4_000),
        response_reserve: 500,
        max_summary_tokens: 300,
        ..Profile::default()
    };
    let (out, work) = compress(t, profile);
    assert!(out.compressed);
    assert!(
        out.messages_dropped.len() > 2_000,
        "{} dropped",
        out.messages_dropped.len()
    );
    assert!(
        work <= once * 3,
        "{work} bytes tokenized for a thread of {once}"
    );
}
