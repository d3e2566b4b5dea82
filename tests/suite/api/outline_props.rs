//! A resent thread's messages recognised from their JSON text
//! (`thread::outline`, what `/v1/tokens` counts with) answer what parsing
//! the whole thread answers: the same count, rows and format, or the same
//! errors; cold (nothing remembered), warm (everything remembered) and with
//! one byte of one message changed after the warm-up.

use std::sync::LazyLock;

use proptest::prelude::*;
use serde_json::Value;
use serde_json::value::RawValue;

use condense::thread::{self, FieldError, OwnedThread, Role, WireFormat};
use condense::tokens::{CountSpec, Counter, Encoders, Method, ModelRegistry, ThreadCount};

static ENCODERS: LazyLock<Encoders> = LazyLock::new(|| Encoders::load().unwrap());

/// The example threads, and large-04's Responses form.
fn threads() -> Vec<&'static str> {
    let mut all = crate::support::common::EXAMPLES.to_vec();
    all.push("large-04.responses");
    all
}

/// What a count answers: the format, each message's role and instruction
/// flag, and the count; or the errors.
type Answer = Result<(WireFormat, Vec<(Role, bool)>, ThreadCount), Vec<FieldError>>;

/// A thread's parts as a request sends them, each message as its JSON text.
fn sent(name: &str) -> OwnedThread<Box<RawValue>> {
    let path = match name.strip_suffix(".responses") {
        Some(_) => format!("tests/fixtures/responses/{name}.json"),
        None => format!("data/threads/{name}.json"),
    };
    let mut body: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let responses = body.get("input").is_some();
    let items = body[if responses { "input" } else { "messages" }].take();
    let text = |v: &Value| RawValue::from_string(v.to_string()).unwrap();
    let system = body.get_mut(if responses { "instructions" } else { "system" });
    OwnedThread {
        format: responses.then_some(WireFormat::Responses),
        messages: items.as_array().unwrap().iter().map(text).collect(),
        system: system.map(Value::take),
        tools: body.get_mut("tools").map(Value::take),
    }
}

/// The whole thread parsed, as the provider path and the other routes do.
fn parsed(raw: &OwnedThread<Box<RawValue>>, counter: &Counter) -> Answer {
    let owned = OwnedThread {
        format: raw.format,
        messages: (raw.messages.iter())
            .map(|m| thread::compact::from_slice(m.get().as_bytes()).unwrap())
            .collect(),
        system: raw.system.clone(),
        tools: raw.tools.clone(),
    };
    let t = thread::parse_owned(owned)?;
    let rows = t.messages.iter().map(|m| (m.role, m.is_instruction()));
    Ok((t.format, rows.collect(), counter.thread(&t)))
}

/// The thread outlined, its messages seen before taken from `counter`'s memo.
fn outlined(raw: &OwnedThread<Box<RawValue>>, counter: &Counter) -> Answer {
    let t = thread::outline(raw.clone(), counter)?;
    let format = t.format;
    let (records, count) = counter.outlined(t);
    let rows = records
        .iter()
        .map(|c| (c.outline.role, c.outline.instruction));
    Ok((format, rows.collect(), count))
}

/// One byte of message `at` changed to `to` where the result is still JSON.
fn edit(
    raw: &mut OwnedThread<Box<RawValue>>,
    at: prop::sample::Index,
    byte: prop::sample::Index,
    to: u8,
) {
    let i = at.index(raw.messages.len());
    let mut text = raw.messages[i].get().as_bytes().to_vec();
    let j = byte.index(text.len());
    text[j] = to;
    if let Ok(text) = String::from_utf8(text)
        && let Ok(changed) = RawValue::from_string(text)
    {
        raw.messages[i] = changed;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn recognised_messages_answer_what_parsed_ones_do(
        name in prop::sample::select(threads()),
        model in prop::sample::select(&[("gpt-4o", None), ("claude-sonnet-4-5", None), ("gpt-4o", Some(3.5))][..]),
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<prop::sample::Index>(), prop::sample::select(&b"a0\"{ }\\,:x"[..])), 1..3),
    ) {
        let registry = ModelRegistry::embedded();
        let method = model.1.map_or(Method::Bpe, |cpt| Method::Chars { chars_per_token: cpt });
        let spec = CountSpec::resolve(&registry, "gpt-4o", Some(model.0), None, method);
        let warm = spec.counter(&ENCODERS);
        let cold = Counter { memoize: false, ..warm };
        let mut raw = sent(name);

        let reference = parsed(&raw, &cold);
        prop_assert!(reference.is_ok(), "{name}: {reference:?}");
        prop_assert_eq!(&outlined(&raw, &cold), &reference);
        prop_assert_eq!(&outlined(&raw, &warm), &reference, "the warm-up");
        prop_assert_eq!(&outlined(&raw, &warm), &reference, "warm");
        // Warm, every message is recognised, none parsed.
        let again = thread::outline(raw.clone(), &warm).unwrap();
        prop_assert!(again.messages.iter().all(|m| matches!(m, thread::Item::Before(_))));

        for (at, byte, to) in edits {
            edit(&mut raw, at, byte, to);
        }
        let reference = parsed(&raw, &cold);
        prop_assert_eq!(&outlined(&raw, &cold), &reference, "edited, cold");
        prop_assert_eq!(&outlined(&raw, &warm), &reference, "edited, after the warm-up");
    }
}
