//! Properties of the thread model and the counter over random threads.

use std::sync::LazyLock;

use proptest::prelude::*;
use serde_json::{Value, json};

use condense::thread::{self, RawThread, WireFormat};
use condense::tokens::{CountSpec, Encoders, Method, ModelRegistry};

/// One step of a conversation: a user turn, an assistant turn, or a tool round
/// of `n` parallel calls with their results.
#[derive(Debug, Clone)]
enum Unit {
    User(String),
    Assistant(String),
    Tools(Vec<String>),
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "\\PC{0,60}",
        "[a-z ]{0,40}",
        Just("<|endoftext|> <|im_start|>".to_string()),
        Just("🦀 Grüße 日本語 \u{200d}\u{0301}".to_string()),
        "x{500,3000}",
    ]
}

fn unit() -> impl Strategy<Value = Unit> {
    prop_oneof![
        text().prop_map(Unit::User),
        text().prop_map(Unit::Assistant),
        prop::collection::vec(text(), 1..4).prop_map(Unit::Tools),
    ]
}

/// The same conversation in both wire formats, with an unknown field on every message.
fn threads(units: &[Unit]) -> (Vec<Value>, Vec<Value>) {
    let mut openai =
        vec![json!({"role": "system", "content": "You are terse.", "x-custom": {"k": 1}})];
    // Anthropic threads open with a user turn.
    openai.push(json!({"role": "user", "content": "start"}));
    let mut anthropic = vec![json!({"role": "user", "content": "start"})];
    let mut next_id = 0;
    for u in units {
        match u {
            Unit::User(t) => {
                openai.push(json!({"role": "user", "content": t, "x-custom": 1}));
                anthropic.push(json!({"role": "user", "content": [{"type": "text", "text": t, "cache_control": {"type": "ephemeral"}}]}));
            }
            Unit::Assistant(t) => {
                openai.push(json!({"role": "assistant", "content": t}));
                anthropic.push(json!({"role": "assistant", "content": t}));
            }
            Unit::Tools(results) => {
                let ids: Vec<String> = results
                    .iter()
                    .map(|_| {
                        next_id += 1;
                        format!("call_{next_id}")
                    })
                    .collect();
                openai.push(json!({"role": "assistant", "content": null, "tool_calls": ids.iter().map(|id| json!({
                    "id": id, "type": "function", "function": {"name": "run", "arguments": "{\"cmd\": \"ls\"}"}
                })).collect::<Vec<_>>()}));
                anthropic.push(
                    json!({"role": "assistant", "content": ids.iter().map(|id| json!({
                    "type": "tool_use", "id": id, "name": "run", "input": {"cmd": "ls"}
                })).collect::<Vec<_>>()}),
                );
                for (id, r) in ids.iter().zip(results) {
                    openai.push(json!({"role": "tool", "tool_call_id": id, "content": r}));
                }
                anthropic.push(
                    json!({"role": "user", "content": ids.iter().zip(results).map(|(id, r)| json!({
                    "type": "tool_result", "tool_use_id": id, "content": r
                })).collect::<Vec<_>>()}),
                );
            }
        }
    }
    (openai, anthropic)
}

static ENCODERS: LazyLock<Encoders> = LazyLock::new(|| Encoders::load().unwrap());

fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        prop_oneof![
            Just("user"),
            Just("assistant"),
            Just("tool"),
            Just("text"),
            Just("tool_use"),
            Just("x")
        ]
        .prop_map(|s| json!(s)),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    Just("role"),
                    Just("content"),
                    Just("type"),
                    Just("text"),
                    Just("tool_calls"),
                    Just("id"),
                    Just("tool_call_id"),
                    Just("tool_use_id"),
                    Just("input"),
                    Just("function")
                ]
                .prop_map(String::from),
                inner,
                0..5
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Valid threads parse in both formats, keep every message value for value,
    /// and their counts add up.
    #[test]
    fn valid_threads_parse_round_trip_and_add_up(units in prop::collection::vec(unit(), 0..12)) {
        let registry = ModelRegistry::embedded();
        let (openai, anthropic) = threads(&units);
        let system = json!("You are terse.");
        for (fmt, messages, system) in [(WireFormat::OpenAi, &openai, None), (WireFormat::Anthropic, &anthropic, Some(&system))] {
            let t = thread::parse(RawThread { format: None, messages, system, tools: None }).unwrap();
            // Detected, not told: the top-level system marks Anthropic, its absence OpenAI.
            prop_assert_eq!(t.format, fmt);
            let raws: Vec<&Value> = t.messages.iter().map(|m| &m.raw).collect();
            prop_assert_eq!(raws, messages.iter().collect::<Vec<_>>());
            for method in [Method::Bpe, Method::Chars { chars_per_token: 3.5 }] {
                let spec = CountSpec::resolve(&registry, "gpt-4o", Some("gpt-4o"), None, method);
                let c = spec.counter(&ENCODERS).thread(&t);
                prop_assert_eq!(c.system.unwrap_or(0) + c.messages.iter().sum::<usize>() + c.tools + 3, c.total);
                prop_assert!(c.messages.iter().all(|&n| n >= 4));
            }
        }
    }

    /// The per-message memo never changes a count: counted with it (twice,
    /// so the second count comes from it, and after other encodings and
    /// methods have filled it) and without it, every message agrees.
    #[test]
    fn the_memo_never_changes_a_count(units in prop::collection::vec(unit(), 0..12)) {
        let registry = ModelRegistry::embedded();
        let (openai, anthropic) = threads(&units);
        let system = json!("You are terse.");
        for (messages, system) in [(&openai, None), (&anthropic, Some(&system))] {
            let t = thread::parse(RawThread { format: None, messages, system, tools: None }).unwrap();
            for (model, method) in [
                ("gpt-4o", Method::Bpe),
                ("gpt-4", Method::Bpe),
                ("claude-sonnet-4-5", Method::Bpe),
                ("gpt-4o", Method::Chars { chars_per_token: 3.5 }),
                ("gpt-4o", Method::Chars { chars_per_token: 4.0 }),
            ] {
                let counter = CountSpec::resolve(&registry, "gpt-4o", Some(model), None, method).counter(&ENCODERS);
                prop_assert!(counter.memoize);
                let plain = condense::tokens::Counter { memoize: false, ..counter };
                let first = counter.thread(&t);
                let again = counter.thread(&t);
                let counted = plain.thread(&t);
                prop_assert_eq!(&first, &counted, "{} {:?}", model, method);
                prop_assert_eq!(&again, &counted, "{} {:?}", model, method);
            }
        }
    }

    /// Anything at all in `messages` is a parse result or a list of errors with
    /// pointers into the request, never a panic.
    #[test]
    fn arbitrary_messages_never_panic(messages in prop::collection::vec(any_json(), 0..6), system in prop::option::of(any_json())) {
        match thread::parse(RawThread { format: None, messages: &messages, system: system.as_ref(), tools: None }) {
            Ok(t) => prop_assert_eq!(t.messages.len(), messages.len()),
            Err(errs) => {
                prop_assert!(!errs.is_empty());
                for e in errs {
                    prop_assert!(e.pointer.starts_with("/messages") || e.pointer.starts_with("/system"), "{}", e.pointer);
                }
            }
        }
    }
}
