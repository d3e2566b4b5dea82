//! Responses threads with OpenAI's settings items and its prefix rule, over
//! random threads: reasoning before calls and messages (items with ids, as
//! Codex sends them), `configuration_update` and `additional_tools` items
//! anywhere, provider `compaction` items (each followed by the settings the
//! API emits after it) and a final `compaction_trigger`, compressed under
//! every strategy that runs offline, forced or when due. What must hold:
//! the output is a valid Responses input; the settings, compaction and
//! trigger items come back byte for byte and in order, the trigger last and
//! everything up to the last compaction first; every kept reasoning item
//! follows the very prefix it followed in the input (OpenAI drops one whose
//! prefix changed), and the removed ones are reported.

use std::sync::LazyLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use proptest::prelude::*;
use serde_json::{Value, json};

use condense::compress::{self, Compression, Compressor};
use condense::policy::{OnUpstreamError, Profile, SummaryRole};
use condense::summarize::Strategy as Summarizer;
use condense::thread::{self, RawThread, Thread, WireFormat};

use crate::support::block_on;

static COMPRESSOR: LazyLock<Compressor> = LazyLock::new(Compressor::offline);

/// Items condense keeps verbatim and in order, never summarized.
const KEPT: [&str; 4] = [
    "configuration_update",
    "additional_tools",
    "compaction",
    "compaction_trigger",
];

#[derive(Debug, Clone)]
enum Unit {
    User(String),
    /// A reply, with reasoning before it when true.
    Reply(String, bool),
    /// Calls with their outputs, reasoning first.
    Tools(Vec<String>),
    Configuration,
    AdditionalTools,
    /// The provider's compaction, then the settings it restores.
    Compaction,
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-z ]{1,40}",
        1 => "\\PC{1,40}",
        1 => "[a-z\n]{2000,9000}",
    ]
}

fn unit() -> impl Strategy<Value = Unit> {
    prop_oneof![
        3 => text().prop_map(Unit::User),
        2 => (text(), any::<bool>()).prop_map(|(t, r)| Unit::Reply(t, r)),
        4 => prop::collection::vec(text(), 1..3).prop_map(Unit::Tools),
        1 => Just(Unit::Configuration),
        1 => Just(Unit::AdditionalTools),
        1 => Just(Unit::Compaction),
    ]
}

fn reasoning(k: usize) -> Value {
    json!({"type": "reasoning", "id": format!("rs_{k}"), "summary": [], "content": null,
           "encrypted_content": format!("gAAA{}{k}==", "x".repeat(40))})
}

fn configuration(k: usize) -> Value {
    let effort = ["low", "high"][k % 2];
    json!({"type": "configuration_update", "reasoning": {"effort": effort},
           "text": {"format": {"type": "text"}}})
}

/// The Responses input of `units`, a `compaction_trigger` last when `trigger`.
fn build(units: &[Unit], trigger: bool) -> Vec<Value> {
    let mut items = vec![
        json!({"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "You are an agent."}]}),
        json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "start"}]}),
    ];
    for (k, u) in units.iter().enumerate() {
        match u {
            Unit::User(t) => items.push(
                json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": t}]}),
            ),
            Unit::Reply(t, reasoned) => {
                if *reasoned {
                    items.push(reasoning(k));
                }
                items.push(json!({"type": "message", "id": format!("msg_{k}"), "role": "assistant", "status": "completed",
                                  "content": [{"type": "output_text", "text": t, "annotations": []}]}));
            }
            Unit::Tools(outputs) => {
                items.push(reasoning(k));
                for j in 0..outputs.len() {
                    items.push(json!({"type": "function_call", "id": format!("fc_{k}_{j}"), "status": "completed",
                                      "call_id": format!("call_{k}_{j}"), "name": "exec_command",
                                      "arguments": "{\"cmd\": \"ls\"}"}));
                }
                for (j, out) in outputs.iter().enumerate() {
                    items.push(json!({"type": "function_call_output", "call_id": format!("call_{k}_{j}"), "output": out}));
                }
            }
            Unit::Configuration => items.push(configuration(k)),
            Unit::AdditionalTools => items.push(json!({"type": "additional_tools", "role": "developer",
                "tools": [{"type": "function", "name": format!("tool_{k}"), "parameters": {"type": "object"}}]})),
            Unit::Compaction => {
                items.push(json!({"type": "compaction", "id": format!("cmp_{k}"), "encrypted_content": "gAAAA".repeat(30)}));
                items.push(configuration(k));
            }
        }
    }
    if trigger {
        items.push(json!({"type": "compaction_trigger"}));
    }
    items
}

#[derive(Debug, Clone)]
struct Settings {
    min_recent: u64,
    n: u64,
    window: u64,
    force: bool,
    strategy: Summarizer,
}

fn settings() -> impl Strategy<Value = Settings> {
    (
        1u64..8,
        4u64..30,
        3000u64..30_000,
        any::<bool>(),
        prop::sample::select(vec![
            Summarizer::Heuristic,
            Summarizer::Truncate,
            Summarizer::Auto,
        ]),
    )
        .prop_map(|(min_recent, n, window, force, strategy)| Settings {
            min_recent,
            n,
            window,
            force,
            strategy,
        })
}

fn run(t: &Thread, s: &Settings) -> Result<compress::Outcome, compress::Error> {
    let profile = Profile {
        max_messages_before_summary: s.n,
        max_tokens_before_summary: 2000,
        min_recent_messages: s.min_recent,
        response_reserve: 500,
        max_summary_tokens: 800,
        context_window: Some(s.window),
        summary_role: SummaryRole::User,
        on_upstream_error: OnUpstreamError::Fallback,
        ..Profile::default()
    };
    block_on(COMPRESSOR.run(Compression {
        model: Some("gpt-4o".into()),
        strategy: s.strategy,
        force: s.force,
        ..Compression::new(t.clone(), profile)
    }))
}

fn kind(v: &Value) -> &str {
    v["type"].as_str().unwrap_or("message")
}

/// Equal as written, key order included.
fn bytes(v: &Value) -> String {
    serde_json::to_string(v).unwrap()
}

/// `v` without its `id`.
fn without_id(v: &Value) -> Value {
    let mut v = v.clone();
    if let Some(o) = v.as_object_mut() {
        o.shift_remove("id");
    }
    v
}

/// Checks every property; true when the thread was compressed.
fn check(input: &[Value], s: &Settings) -> Result<bool, TestCaseError> {
    let t = thread::parse(RawThread {
        format: Some(WireFormat::Responses),
        messages: input,
        system: None,
        tools: None,
    })
    .expect("generated threads are valid");
    let out = match run(&t, s) {
        Ok(out) => out,
        Err(compress::Error::DoesNotFit(_)) => return Ok(false),
        Err(e) => return Err(TestCaseError::fail(format!("{e}"))),
    };
    let output: Vec<Value> = out.thread.messages.iter().map(|m| m.raw.clone()).collect();
    if !out.compressed {
        prop_assert_eq!(&output, input);
        return Ok(false);
    }
    // A valid Responses input.
    let reparsed = thread::parse(RawThread {
        format: Some(WireFormat::Responses),
        messages: &output,
        system: None,
        tools: None,
    });
    prop_assert!(reparsed.is_ok(), "invalid output: {:?}", reparsed.err());
    // Settings, compactions and the trigger: byte for byte, in order.
    let kept = |items: &[Value]| -> Vec<String> {
        items
            .iter()
            .filter(|i| KEPT.contains(&kind(i)))
            .map(bytes)
            .collect()
    };
    prop_assert_eq!(kept(&output), kept(input));
    if input
        .last()
        .is_some_and(|i| kind(i) == "compaction_trigger")
    {
        prop_assert_eq!(output.last().map(bytes), input.last().map(bytes));
    }
    // Never summarized over: the conversation up to the last compaction, and the settings after it.
    let pinned = t.pinned_len();
    if let Some(last) = input.iter().rposition(|i| kind(i) == "compaction") {
        prop_assert!(pinned > last);
    }
    prop_assert_eq!(&output[..pinned], &input[..pinned]);

    // Every other output item is the input's, or one a removed reasoning
    // item preceded without its `id`, or a reported cut, or the summary.
    let summary = out
        .thread
        .messages
        .iter()
        .position(|m| m.summary_marker().is_some());
    let mut rest = input.iter().enumerate();
    for (j, item) in output.iter().enumerate() {
        if Some(j) == summary {
            continue;
        }
        let found = rest.by_ref().find(|(i, x)| {
            bytes(x) == bytes(item)
                || bytes(&without_id(x)) == bytes(item)
                || out.messages_truncated.contains(i)
        });
        prop_assert!(
            found.is_some(),
            "output item {j} is not the input's: {item}"
        );
    }
    // Reasoning: none after a summary written now, nor any other whose
    // prefix changed (OpenAI would drop it unannounced); what went is reported.
    let removed = |i: &Value| kind(i) == "reasoning";
    let gone =
        input.iter().filter(|i| removed(i)).count() - output.iter().filter(|i| removed(i)).count();
    let reported = out.applied_edits.iter().map(|e| match e {
        compress::AppliedEdit::RemoveStaleThinking {
            removed_thinking_turns,
            ..
        } => *removed_thinking_turns,
        _ => 0,
    });
    let summarized = out.summary.as_ref().map_or(0, |s| {
        (s.first_message_idx..=s.last_message_idx)
            .filter(|&i| removed(&input[i]))
            .count()
    });
    let dropped = out
        .messages_dropped
        .iter()
        .filter(|&&i| removed(&input[i]))
        .count();
    prop_assert_eq!(
        gone,
        summarized + dropped,
        "reasoning items gone unreported"
    );
    prop_assert!(reported.sum::<usize>() <= dropped);
    for (j, item) in output.iter().enumerate() {
        if kind(item) != "reasoning" {
            continue;
        }
        if let (Some(_), Some(at)) = (&out.summary, summary) {
            prop_assert!(j < at, "reasoning item {j} follows a summary written now");
        }
        let i = input.iter().position(|x| x == item).unwrap();
        let same_prefix = i == j
            && output[..j]
                .iter()
                .zip(input)
                .all(|(a, b)| bytes(a) == bytes(b));
        prop_assert!(same_prefix, "reasoning item {j} follows a changed prefix");
    }
    Ok(true)
}

#[test]
fn responses_items_and_reasoning_survive_any_compression() {
    static COMPRESSED: AtomicUsize = AtomicUsize::new(0);
    static CASES: AtomicUsize = AtomicUsize::new(0);
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: 96,
        ..ProptestConfig::default()
    });
    let strategy = (
        prop::collection::vec(unit(), 0..36),
        any::<bool>(),
        settings(),
    );
    runner
        .run(&strategy, |(units, trigger, s)| {
            let input = build(&units, trigger);
            CASES.fetch_add(1, Ordering::Relaxed);
            if check(&input, &s)? {
                COMPRESSED.fetch_add(1, Ordering::Relaxed);
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
