//! Shared helpers for the wire parsers.

use std::borrow::Cow;

use super::{Bounded, FieldError, Message, Opaque, Part};
use serde_json::Value;

/// A message parser: the source, its JSON pointer, where errors go.
pub type ParseOne<'a> = fn(Cow<'a, Value>, &str, &mut Vec<FieldError>) -> Option<Message>;

/// Every item of `/{field}` parsed by `parse`, its errors added to
/// `errs` (which keeps a bounded number of them).
pub fn parse_all<'a>(
    items: Vec<Cow<'a, Value>>,
    field: &str,
    errs: &mut Bounded,
    parse: ParseOne<'a>,
) -> Vec<Message> {
    let mut scratch = Vec::new();
    items
        .into_iter()
        .enumerate()
        .filter_map(|(i, m)| {
            let parsed = parse(m, &format!("/{field}/{i}"), &mut scratch);
            errs.absorb(&mut scratch);
            parsed
        })
        .collect()
}

/// A message's parts as read so far, and whether it is still plain (a
/// string or null content with nothing else: the cookbook formula is exact
/// for it). The chat parsers hand it from one step to the next.
pub struct Content {
    pub parts: Vec<Part>,
    pub plain: bool,
}

/// A block or item kept verbatim, estimated from its compact JSON.
pub fn opaque(kind: &str, v: &Value) -> Part {
    Part::Opaque(Opaque {
        kind: kind.to_string(),
        text: v.to_string(),
        encrypted: 0,
        compaction: false,
    })
}

/// The provider's compaction: its readable `content` (Anthropic) and
/// its `encrypted_content` (OpenAI), whichever it has.
pub fn compaction(v: &Value) -> Part {
    let text = v.get("content").and_then(Value::as_str).unwrap_or_default();
    let encrypted = v
        .get("encrypted_content")
        .and_then(Value::as_str)
        .map_or(0, str::len);
    Part::Opaque(Opaque {
        kind: "compaction".into(),
        text: text.to_string(),
        encrypted,
        compaction: true,
    })
}

pub fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A required string field.
pub fn string(obj: &Value, key: &str, at: &str, errs: &mut Vec<FieldError>) -> Option<String> {
    match obj.get(key) {
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => not_a_string(other, key, at, errs),
        None => {
            errs.push(FieldError::new(format!("{at}/{key}"), "is required"));
            None
        }
    }
}

/// An optional string field (absent or null is None).
pub fn opt_string(obj: &Value, key: &str, at: &str, errs: &mut Vec<FieldError>) -> Option<String> {
    match obj.get(key) {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => not_a_string(other, key, at, errs),
    }
}

/// The error of a field `key` at `at` that holds `other`, not a string.
fn not_a_string(other: &Value, key: &str, at: &str, errs: &mut Vec<FieldError>) -> Option<String> {
    errs.push(FieldError::new(
        format!("{at}/{key}"),
        format!("must be a string, not {}", type_name(other)),
    ));
    None
}

/// `metadata.iteration`, when present: a non-negative integer.
pub fn iteration(obj: &Value, at: &str, errs: &mut Vec<FieldError>) -> Option<u64> {
    let it = obj.get("metadata")?.get("iteration")?;
    match it.as_u64() {
        Some(n) => Some(n),
        None if it.is_null() => None,
        None => {
            errs.push(FieldError::new(
                format!("{at}/metadata/iteration"),
                "must be a non-negative integer",
            ));
            None
        }
    }
}
