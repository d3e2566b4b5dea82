//! The clearing properties over random agent conversations, each rendered
//! in every wire format (see `clear_model`): pairs stay valid, the newest
//! `keep` tool uses and excluded tools are untouched, `clear_at_least` is
//! respected, the output is deterministic and idempotent, and the reported
//! savings equal a recount.

use std::sync::LazyLock;

use proptest::prelude::*;
use serde_json::Value;

use condense::compress::{AppliedEdit, Compression, Compressor, Outcome};
use condense::policy::{ClearSettings, ClearTrigger, DEFAULT_PLACEHOLDER, Profile};
use condense::summarize::Strategy as Summarizer;
use condense::thread::{self, RawThread, Thread};

use super::clear_model::{Call, Conversation, Turn, Wire, id, wires};
use crate::support::block_on;

static COMPRESSOR: LazyLock<Compressor> = LazyLock::new(Compressor::offline);
const TOOLS: [&str; 3] = ["read_file", "bash", "memory"];

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-z ]{0,40}",
        2 => "\\PC{1,40}",
        2 => "[a-z\n]{200,4000}",
    ]
}

fn call() -> impl Strategy<Value = Call> {
    (
        0..TOOLS.len(),
        "[a-z ./]{0,30}",
        text(),
        prop::bool::weighted(0.2),
    )
        .prop_map(|(t, input, output, error)| Call {
            name: TOOLS[t].into(),
            input,
            output,
            error,
        })
}

fn turn() -> impl Strategy<Value = Turn> {
    let thinking = prop::option::weighted(0.5, "[a-z ]{1,200}");
    prop_oneof![
        2 => text().prop_map(Turn::User),
        1 => (thinking.clone(), text()).prop_map(|(thinking, text)| Turn::Assistant { thinking, text }),
        4 => (thinking, prop::collection::vec(call(), 1..4))
            .prop_map(|(thinking, calls)| Turn::Tools { thinking, calls }),
    ]
}

fn conversation() -> impl Strategy<Value = Conversation> {
    (
        prop::collection::vec(turn(), 0..30),
        prop::bool::weighted(0.2),
    )
        .prop_map(|(turns, pending)| Conversation {
            turns: std::iter::once(Turn::User("start".into()))
                .chain(turns)
                .collect(),
            pending,
        })
}

fn settings() -> impl Strategy<Value = ClearSettings> {
    (
        0u64..6,
        prop_oneof![3 => Just(0u64), 1 => 0u64..3000],
        prop::sample::subsequence(TOOLS.to_vec(), 0..2),
        any::<bool>(),
        prop_oneof![
            Just(DEFAULT_PLACEHOLDER.to_string()),
            Just("[{chars} gone]".to_string())
        ],
        prop::option::of(0u64..3),
    )
        .prop_map(
            |(keep, at_least, exclude, inputs, placeholder, thinking)| ClearSettings {
                keep,
                trigger: ClearTrigger {
                    input_tokens: None,
                    tool_uses: Some(1),
                },
                clear_at_least: at_least,
                exclude_tools: exclude.into_iter().map(String::from).collect(),
                clear_tool_inputs: inputs,
                placeholder,
                keep_thinking_turns: thinking,
            },
        )
}

fn parse(wire: &dyn Wire, body: &Value) -> Thread {
    let (messages, system) = wire.keys();
    thread::parse(RawThread {
        format: Some(wire.format()),
        messages: body[messages].as_array().unwrap(),
        system: body.get(system),
        tools: None,
    })
    .expect("generated threads are valid")
}

fn run(t: &Thread, s: &ClearSettings) -> Outcome {
    block_on(COMPRESSOR.run(Compression {
        model: Some("gpt-4o".into()),
        strategy: Summarizer::ClearToolResults,
        ..Compression::new(
            t.clone(),
            Profile {
                clear: Some(s.clone()),
                ..Profile::default()
            },
        )
    }))
    .expect("clearing never fails")
}

/// `output` with the reasoning items it left out put back where they were
/// in `input`, after checking each followed the first item clearing
/// changed and that their number is the one reported.
fn stale_reasoning_back(
    input: &[Value],
    output: &[Value],
    out: &Outcome,
) -> Result<Vec<Value>, TestCaseError> {
    let (mut back, mut gone, mut rest) = (Vec::new(), Vec::new(), output.iter().peekable());
    for (i, x) in input.iter().enumerate() {
        if x["type"] == "reasoning" && rest.peek() != Some(&x) {
            gone.push(i);
            back.push(x.clone());
        } else if let Some(y) = rest.next() {
            back.push(y.clone());
        }
    }
    prop_assert!(rest.next().is_none(), "items were added");
    let first_changed = input.iter().zip(&back).position(|(x, y)| x != y);
    for &i in &gone {
        prop_assert!(
            first_changed.is_some_and(|c| c < i),
            "reasoning item {} removed, though nothing before it changed",
            i
        );
    }
    let reported: usize = out
        .applied_edits
        .iter()
        .map(|e| match e {
            AppliedEdit::RemoveStaleThinking {
                removed_thinking_turns,
                ..
            } => *removed_thinking_turns,
            _ => 0,
        })
        .sum();
    prop_assert_eq!(reported, gone.len());
    prop_assert_eq!(&out.messages_dropped, &gone);
    Ok(back)
}

fn raws(t: &Thread) -> Vec<Value> {
    t.messages.iter().map(|m| m.raw.clone()).collect()
}

/// Checks every property; true when something was cleared.
fn check(wire: &dyn Wire, c: &Conversation, s: &ClearSettings) -> Result<bool, TestCaseError> {
    let body = wire.render(c);
    let t = parse(wire, &body);
    let out = run(&t, s);
    let (input, returned) = (raws(&t), raws(&out.thread));
    // Responses: the reasoning items after the first cleared result go
    // (OpenAI drops reasoning whose prefix changed); put back, reported.
    let output = stale_reasoning_back(&input, &returned, &out)?;

    // Pairs valid: the output parses and validates as any input does.
    let reparsed = thread::parse(RawThread {
        format: Some(wire.format()),
        messages: &returned,
        system: body.get(wire.keys().1),
        tools: None,
    });
    prop_assert!(reparsed.is_ok(), "invalid output: {:?}", reparsed.err());
    prop_assert_eq!(output.len(), input.len());

    // Deterministic: the same bytes twice.
    let twice = run(&t, s);
    prop_assert_eq!(
        serde_json::to_string(&returned).unwrap(),
        serde_json::to_string(&raws(&twice.thread)).unwrap()
    );

    // The edits' numbers equal a recount (a run's `tokens_before` counts its input).
    let again = run(&out.thread, s);
    prop_assert_eq!(again.tokens_before, out.tokens_after);
    let saved: usize = out
        .applied_edits
        .iter()
        .map(|e| match e {
            AppliedEdit::ClearToolUses {
                cleared_input_tokens,
                ..
            }
            | AppliedEdit::ClearThinking {
                cleared_input_tokens,
                ..
            }
            | AppliedEdit::RemoveStaleThinking {
                cleared_input_tokens,
                ..
            } => *cleared_input_tokens,
        })
        .sum();
    prop_assert_eq!(saved, out.tokens_before - out.tokens_after);
    prop_assert_eq!(out.compressed, !out.applied_edits.is_empty());
    if out.applied_edits.is_empty() {
        prop_assert_eq!(&output, &input);
    }

    // Idempotent: clearing the output again changes nothing.
    prop_assert!(again.applied_edits.is_empty(), "{:?}", again.applied_edits);
    prop_assert_eq!(raws(&again.thread), returned.clone());

    // The newest `keep` tool uses and every excluded tool are untouched;
    // without a tool edit, no tool use is touched (`clear_at_least`).
    let tool_edit = out.applied_edits.iter().find_map(|e| match e {
        AppliedEdit::ClearToolUses {
            cleared_input_tokens,
            ..
        } => Some(*cleared_input_tokens),
        _ => None,
    });
    if let Some(n) = tool_edit {
        prop_assert!(n as u64 >= s.clear_at_least && n > 0);
    }
    let names: Vec<&str> = c
        .turns
        .iter()
        .flat_map(|t| match t {
            Turn::Tools { calls, .. } => calls.iter().map(|c| c.name.as_str()).collect(),
            _ => Vec::new(),
        })
        .collect();
    let protected = names.len().saturating_sub(s.keep as usize);
    for (n, name) in names.iter().enumerate() {
        let (call, result) = wire.find(&output, &id(n));
        let (call_in, result_in) = wire.find(&input, &id(n));
        prop_assert!(call.is_some() && result.is_some() == result_in.is_some());
        if n >= protected || s.exclude_tools.iter().any(|x| x == name) || tool_edit.is_none() {
            prop_assert_eq!(
                (call, result),
                (call_in, result_in),
                "tool use {} ({})",
                n,
                name
            );
        }
    }

    // Thinking: where kept, byte for byte; the newest turns with thinking
    // and the turn in progress keep theirs.
    let with: Vec<usize> = (0..input.len())
        .filter(|&i| !wire.thinking(&input[i]).is_empty())
        .collect();
    let current = t
        .messages
        .iter()
        .rposition(|m| {
            m.role == thread::Role::User
                && m.parts.iter().any(|p| matches!(p, thread::Part::Text(_)))
        })
        .unwrap_or(0);
    let keep = s.keep_thinking_turns.map_or(usize::MAX, |k| k as usize);
    for (k, &i) in with.iter().enumerate() {
        let kept = wire.thinking(&output[i]);
        prop_assert!(kept.is_empty() || kept == wire.thinking(&input[i]));
        if with.len() - k <= keep || i > current {
            prop_assert_eq!(kept, wire.thinking(&input[i]), "message {}", i);
        }
    }
    Ok(!out.applied_edits.is_empty())
}

/// The properties in every format, checking that the generator really
/// clears (a property test whose cases never clear would prove nothing).
#[test]
fn clearing_properties_hold_in_every_format() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static CLEARED: AtomicUsize = AtomicUsize::new(0);
    static CASES: AtomicUsize = AtomicUsize::new(0);
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: 64,
        ..ProptestConfig::default()
    });
    runner
        .run(&(conversation(), settings()), |(c, s)| {
            for wire in wires() {
                CASES.fetch_add(1, Ordering::Relaxed);
                if check(wire, &c, &s)? {
                    CLEARED.fetch_add(1, Ordering::Relaxed);
                }
            }
            Ok(())
        })
        .unwrap();
    let (done, all) = (
        CLEARED.load(Ordering::Relaxed),
        CASES.load(Ordering::Relaxed),
    );
    assert!(
        done * 3 >= all,
        "only {done} of {all} cases cleared anything"
    );
}
