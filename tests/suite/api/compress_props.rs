//! The compression properties, over random threads in every wire format
//! (Chat Completions, Anthropic, Responses): parallel tool calls, pending
//! calls, reasoning items, unicode, huge tool results.

use std::collections::BTreeSet;
use std::sync::LazyLock;

use proptest::prelude::*;
use serde_json::{Value, json};

use condense::compress::{self, Compression, Compressor};
use condense::policy::{OnUpstreamError, Profile, SummaryRole};
use condense::summarize::Strategy as Summarizer;
use condense::thread::{self, RawThread, Thread, WireFormat};

use crate::support::block_on;

static COMPRESSOR: LazyLock<Compressor> = LazyLock::new(Compressor::offline);

#[derive(Debug, Clone)]
enum Unit {
    User(String),
    Assistant(String),
    Tools(Vec<String>),
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-z ]{1,40}",
        2 => "\\PC{1,40}",
        1 => Just("🦀 src/main.rs: error[E0308]: mismatched types".to_string()),
        1 => "[a-z\n]{2000,12000}",
    ]
}

fn unit() -> impl Strategy<Value = Unit> {
    prop_oneof![
        3 => text().prop_map(Unit::User),
        3 => text().prop_map(Unit::Assistant),
        2 => prop::collection::vec(text(), 1..4).prop_map(Unit::Tools),
    ]
}

/// The same conversation in every format; `pending` leaves the last tool round without results.
fn build(units: &[Unit], pending: bool) -> (Vec<Value>, Vec<Value>, Vec<Value>) {
    let mut openai = vec![json!({"role": "system", "content": "You are an agent.", "x": 1})];
    let mut anthropic = Vec::new();
    let mut responses = Vec::new();
    let mut id = 0;
    // Anthropic threads open with a user turn.
    let units: Vec<Unit> = std::iter::once(Unit::User("start".into()))
        .chain(units.iter().cloned())
        .collect();
    let last = units.len() - 1;
    for (k, u) in units.iter().enumerate() {
        match u {
            Unit::User(t) => {
                openai.push(json!({"role": "user", "content": t}));
                anthropic.push(json!({"role": "user", "content": t, "x": 1}));
                responses.push(json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": t}]}));
            }
            Unit::Assistant(t) => {
                openai.push(json!({"role": "assistant", "content": t}));
                anthropic
                    .push(json!({"role": "assistant", "content": [{"type": "text", "text": t}]}));
                responses.push(json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": t}], "x": 1}));
            }
            Unit::Tools(results) => {
                let ids: Vec<String> = results
                    .iter()
                    .map(|_| {
                        id += 1;
                        format!("c{id}")
                    })
                    .collect();
                openai.push(json!({"role": "assistant", "content": null, "tool_calls": ids.iter().map(|i| json!({
                    "id": i, "type": "function", "function": {"name": "run_command", "arguments": "{\"command\": \"ls\"}"}})).collect::<Vec<_>>()}));
                anthropic.push(json!({"role": "assistant", "content": ids.iter().map(|i| json!({
                    "type": "tool_use", "id": i, "name": "run_command", "input": {"command": "ls"}})).collect::<Vec<_>>()}));
                responses.push(json!({"type": "reasoning", "id": format!("rs_{k}"), "summary": [], "encrypted_content": format!("gAAA{k}==")}));
                for i in &ids {
                    responses.push(json!({"type": "function_call", "call_id": i, "name": "run_command", "arguments": "{\"command\": \"ls\"}"}));
                }
                if pending && k == last {
                    continue;
                }
                for (i, r) in ids.iter().zip(results) {
                    responses
                        .push(json!({"type": "function_call_output", "call_id": i, "output": r}));
                }
                for (i, r) in ids.iter().zip(results) {
                    openai.push(json!({"role": "tool", "tool_call_id": i, "content": r}));
                }
                anthropic.push(
                    json!({"role": "user", "content": ids.iter().zip(results).map(|(i, r)| json!({
                    "type": "tool_result", "tool_use_id": i, "content": r})).collect::<Vec<_>>()}),
                );
            }
        }
    }
    (openai, anthropic, responses)
}

fn parse(format: WireFormat, messages: &[Value], system: Option<&Value>) -> Thread {
    thread::parse(RawThread {
        format: Some(format),
        messages,
        system,
        tools: None,
    })
    .expect("generated threads are valid")
}

#[derive(Debug, Clone)]
struct Settings {
    min_recent: u64,
    n: u64,
    k: u64,
    max_summary: u64,
    window: u64,
    force: bool,
    truncate: bool,
}

fn settings() -> impl Strategy<Value = Settings> {
    (
        1u64..8,
        4u64..40,
        200u64..20_000,
        64u64..2000,
        3000u64..40_000,
        any::<bool>(),
        prop::bool::weighted(0.2),
    )
        .prop_map(
            |(min_recent, n, k, max_summary, window, force, truncate)| Settings {
                min_recent,
                n,
                k,
                max_summary,
                window,
                force,
                truncate,
            },
        )
}

fn profile(s: &Settings) -> Profile {
    Profile {
        max_messages_before_summary: s.n,
        max_tokens_before_summary: s.k,
        min_recent_messages: s.min_recent,
        response_reserve: 500,
        max_summary_tokens: s.max_summary,
        context_window: Some(s.window),
        summary_role: SummaryRole::User,
        llm_min_tokens: 4000,
        on_upstream_error: OnUpstreamError::Fallback,
        ..Profile::default()
    }
}

fn run(t: &Thread, s: &Settings, force: bool) -> Result<compress::Outcome, compress::Error> {
    block_on(COMPRESSOR.run(Compression {
        model: Some("gpt-4o".into()),
        strategy: if s.truncate {
            Summarizer::Truncate
        } else {
            Summarizer::Heuristic
        },
        force,
        ..Compression::new(t.clone(), profile(s))
    }))
}

/// Checks every property; true when the thread was compressed.
fn check(t: &Thread, s: &Settings) -> Result<bool, TestCaseError> {
    let out = match run(t, s, s.force) {
        Ok(out) => out,
        // Only a budget that cannot hold the pinned prefix plus one unit may refuse.
        Err(compress::Error::DoesNotFit(_)) => return Ok(false),
        Err(e) => return Err(TestCaseError::fail(format!("{e}"))),
    };
    let input = &t.messages;
    let output = &out.thread.messages;
    let pinned = t.pinned_len();
    let budget = (s.window - 500) as usize;

    // 1. The pinned prefix first and verbatim (and Anthropic's system unchanged).
    prop_assert_eq!(&output[..pinned], &input[..pinned]);
    prop_assert_eq!(&out.thread.system, &t.system);
    if !out.compressed {
        prop_assert_eq!(output, input);
        return Ok(false);
    }
    // 7. The output passes the same validation as any input.
    let raws: Vec<Value> = output.iter().map(|m| m.raw.clone()).collect();
    let system = out.thread.system.as_ref().map(|m| m.raw.clone());
    let reparsed = thread::parse(RawThread {
        format: Some(t.format),
        messages: &raws,
        system: system.as_ref(),
        tools: None,
    });
    prop_assert!(reparsed.is_ok(), "invalid output: {:?}", reparsed.err());
    // 3. (checked by that validation) and the conversation opens with a user turn in Anthropic.
    if t.format == WireFormat::Anthropic {
        prop_assert_eq!(output[0].role, condense::thread::Role::User);
    }
    // A reasoning item is never separated from the item after it.
    for (j, m) in output.iter().enumerate() {
        if m.raw["type"] == "reasoning" {
            let next = output.get(j + 1).map(|n| n.raw["type"].clone());
            prop_assert_eq!(
                next,
                Some(json!("function_call")),
                "reasoning item {} cut off",
                j
            );
        }
    }
    // 5. It fits.
    prop_assert!(
        out.tokens_after <= budget,
        "{} > {budget}",
        out.tokens_after
    );

    // 2 and 4: every input message is returned verbatim, summarized, or reported.
    let truncated: BTreeSet<usize> = out.messages_truncated.iter().copied().collect();
    let dropped: BTreeSet<usize> = out.messages_dropped.iter().copied().collect();
    let summarized = out
        .summary
        .as_ref()
        .map_or(0..0, |s| s.first_message_idx..s.last_message_idx + 1);
    let has_summary = out.summary.is_some() as usize;
    let tail = &output[pinned + has_summary..];
    let tail_start = input.len() - tail.len();
    for (j, m) in tail.iter().enumerate() {
        let i = tail_start + j;
        prop_assert!(
            truncated.contains(&i) || *m == input[i],
            "message {i} changed without being reported"
        );
    }
    for i in pinned..tail_start {
        prop_assert!(
            summarized.contains(&i) || dropped.contains(&i),
            "message {i} silently disappeared"
        );
    }
    if dropped.is_empty() {
        prop_assert!(
            tail.len() >= (s.min_recent as usize).min(input.len() - pinned),
            "fewer than min_recent kept"
        );
    }
    if let Some(summary) = &out.summary {
        prop_assert!(summary.token_count <= s.max_summary as usize);
        prop_assert_eq!(summary.messages_summarized, summarized.len());
    }

    // 6. Compressing the output again, with no new messages and no force, changes nothing.
    let again = run(&out.thread, s, false).map_err(|e| TestCaseError::fail(format!("{e}")))?;
    prop_assert!(
        !again.compressed,
        "a second pass compressed again: {:?}",
        again.reason
    );
    prop_assert_eq!(&again.thread.messages, output);
    Ok(true)
}

/// Runs the properties and checks the generator really exercises compression
/// (a property test whose cases never compress would prove nothing).
#[test]
fn compression_properties_hold_in_every_format() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static COMPRESSED: AtomicUsize = AtomicUsize::new(0);
    static CASES: AtomicUsize = AtomicUsize::new(0);
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: 96,
        ..ProptestConfig::default()
    });
    let strategy = (
        prop::collection::vec(unit(), 0..40),
        prop::bool::weighted(0.2),
        settings(),
    );
    runner
        .run(&strategy, |(units, pending, s)| {
            let (openai, anthropic, responses) = build(&units, pending);
            let system = json!("You are an agent.");
            for t in [
                parse(WireFormat::OpenAi, &openai, None),
                parse(WireFormat::Anthropic, &anthropic, Some(&system)),
                parse(WireFormat::Responses, &responses, Some(&system)),
            ] {
                CASES.fetch_add(1, Ordering::Relaxed);
                if check(&t, &s)? {
                    COMPRESSED.fetch_add(1, Ordering::Relaxed);
                }
            }
            Ok(())
        })
        .unwrap();
    let (done, all) = (
        COMPRESSED.load(Ordering::Relaxed),
        CASES.load(Ordering::Relaxed),
    );
    assert!(done * 3 >= all, "only {done} of {all} cases compressed");
}
