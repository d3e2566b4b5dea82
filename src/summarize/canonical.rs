//! The canonical form of a span, and its content hash: the summarizers read
//! only that form, and the key hashes it with every setting that shapes the
//! text, so one key means one text. Wire detail is left out (tool-call ids
//! become `call_0`, … with their pairing kept; tool results are messages of
//! their own; arguments are JSON with sorted keys; instructions are dropped).

use std::collections::HashMap;

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::thread::{MediaKind, Message, Part, Role, ToolResult};

/// Bumped whenever the canonical form, the hashed settings or a summarizer's output change.
pub const KEY_VERSION: &str = "condense-summary-v8";

/// `span` in canonical form (see the module docs).
pub fn canonical(span: &[Message]) -> Vec<Message> {
    canonical_with_ends(span).0
}

/// [`canonical`], and for each canonical message the end (exclusive) of
/// the caller's message it came from.
pub fn canonical_with_ends(span: &[Message]) -> (Vec<Message>, Vec<usize>) {
    let mut ids: HashMap<&str, String> = HashMap::new();
    let mut external = 0usize;
    let mut out = Vec::with_capacity(span.len());
    let mut ends = Vec::with_capacity(span.len());
    for (i, m) in span.iter().enumerate() {
        if m.is_instruction() {
            continue;
        }
        let mut own: Vec<Part> = Vec::new();
        for p in &m.parts {
            match p {
                Part::ToolCall(c) => {
                    let id = format!("call_{}", ids.len());
                    ids.insert(c.id.as_str(), id.clone());
                    own.push(Part::ToolCall(crate::thread::ToolCall {
                        id,
                        name: c.name.clone(),
                        arguments: canonical_json(&c.arguments),
                        pointer: String::new(),
                    }));
                }
                Part::FunctionCall { name, arguments } => own.push(Part::FunctionCall {
                    name: name.clone(),
                    arguments: canonical_json(arguments),
                }),
                Part::ToolResult(r) => {
                    if !own.is_empty() {
                        out.push(message(m.role, std::mem::take(&mut own)));
                    }
                    let call_id = match ids.get(r.call_id.as_str()) {
                        Some(id) => id.clone(),
                        // Answers a call before the span: named, but not by its wire id.
                        None => {
                            external += 1;
                            format!("external_{external}")
                        }
                    };
                    let result = Part::ToolResult(ToolResult {
                        call_id,
                        content: r.content.clone(),
                        is_error: r.is_error,
                        pointer: String::new(),
                    });
                    out.push(message(Role::Tool, vec![result]));
                }
                other => own.push(other.clone()),
            }
        }
        // A message with no parts at all (an empty turn) still counts as one.
        if !own.is_empty() || m.parts.is_empty() {
            out.push(message(m.role, own));
        }
        ends.resize(out.len(), i + 1);
    }
    (out, ends)
}

fn message(role: Role, parts: Vec<Part>) -> Message {
    Message {
        role,
        name: None,
        parts,
        plain: true,
        iteration: None,
        raw: Value::Null,
    }
}

/// Everything besides the span that shapes a summary's text.
#[derive(Debug, Clone, PartialEq)]
pub struct KeySettings<'a> {
    /// What writes it: `heuristic`, `llm`, `hybrid`, `iterations`.
    pub writer: &'a str,
    pub model: Option<&'a str>,
    /// The summary this one extends.
    pub prior: Option<&'a str>,
    /// Most tokens the summary may take, and how they are counted.
    pub limit: usize,
    pub counting: String,
    pub instructions: Option<&'a str>,
    /// Writer-specific settings (the LLM's window, the messages' iterations).
    pub extra: String,
}

/// The content hash of a summary of `span` (canonical) and its rolling prefix
/// hashes (entry `i` covers `span[..=i]`), in one pass.
pub fn hashes(span: &[Message], k: &KeySettings<'_>) -> (String, Vec<String>) {
    let mut h = Sha256::new();
    field(&mut h, "v", KEY_VERSION);
    field(&mut h, "prompt", &super::PROMPT_VERSION.to_string());
    field(&mut h, "writer", k.writer);
    field(&mut h, "model", k.model.unwrap_or(""));
    field(&mut h, "limit", &k.limit.to_string());
    field(&mut h, "counting", &k.counting);
    field(&mut h, "instructions", k.instructions.unwrap_or(""));
    field(&mut h, "extra", &k.extra);
    field(&mut h, "prior", k.prior.unwrap_or(""));
    let seed = h.clone();
    let prefixes: Vec<String> = span
        .iter()
        .map(|m| {
            encode(&mut h, m);
            format!("{:x}", h.clone().finalize())
        })
        .collect();
    let key = prefixes
        .last()
        .cloned()
        .unwrap_or_else(|| format!("{:x}", seed.finalize()));
    (key, prefixes)
}

/// JSON text with sorted keys and no whitespace; other text as it is.
fn canonical_json(text: &str) -> String {
    fn sort(v: Value) -> Value {
        match v {
            Value::Object(map) => {
                let mut entries: Vec<_> = map.into_iter().collect();
                entries.sort_by(|a, b| a.0.cmp(&b.0));
                Value::Object(entries.into_iter().map(|(k, v)| (k, sort(v))).collect())
            }
            Value::Array(items) => Value::Array(items.into_iter().map(sort).collect()),
            other => other,
        }
    }
    match serde_json::from_str::<Value>(text) {
        Ok(v) => sort(v).to_string(),
        Err(_) => text.to_string(),
    }
}

/// A tagged, length-prefixed field: no two sequences of fields hash alike.
fn field(h: &mut Sha256, tag: &str, value: &str) {
    h.update(tag.as_bytes());
    h.update((value.len() as u64).to_le_bytes());
    h.update(value.as_bytes());
}

/// Adds every field of `m` a summarizer can read to `h`, by name (not
/// `Debug`: a new field or toolchain must not re-key the cache).
fn encode(h: &mut Sha256, m: &Message) {
    field(h, "message", m.role.as_str());
    field(h, "name", m.name.as_deref().unwrap_or(""));
    let iteration = m.iteration.map(|i| i.to_string());
    field(h, "iteration", iteration.as_deref().unwrap_or(""));
    encode_parts(h, &m.parts);
}

fn encode_parts(h: &mut Sha256, parts: &[Part]) {
    field(h, "parts", &parts.len().to_string());
    for p in parts {
        encode_part(h, p);
    }
}

fn encode_part(h: &mut Sha256, p: &Part) {
    match p {
        Part::Text(t) => field(h, "text", t),
        Part::Refusal(t) => field(h, "refusal", t),
        Part::Thinking(t) => field(h, "thinking", t),
        Part::RedactedThinking(t) => field(h, "redacted_thinking", t),
        Part::Media(kind) => field(h, "media", media(*kind)),
        Part::ToolCall(c) => {
            field(h, "tool_call", &c.id);
            field(h, "name", &c.name);
            field(h, "arguments", &c.arguments);
        }
        Part::ToolResult(r) => {
            field(h, "tool_result", &r.call_id);
            field(h, "is_error", if r.is_error { "1" } else { "0" });
            encode_parts(h, &r.content);
        }
        Part::FunctionCall { name, arguments } => {
            field(h, "function_call", name);
            field(h, "arguments", arguments);
        }
        Part::Opaque(o) => {
            field(h, "opaque", &o.kind);
            field(h, "text", &o.text);
            field(h, "encrypted", &o.encrypted.to_string());
            field(h, "compaction", if o.compaction { "1" } else { "0" });
        }
    }
}

fn media(kind: MediaKind) -> &'static str {
    match kind {
        MediaKind::Image { low_detail: true } => "image/low",
        MediaKind::Image { low_detail: false } => "image",
        MediaKind::Audio => "audio",
        MediaKind::File => "file",
        MediaKind::Document => "document",
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::thread::{RawThread, WireFormat, parse};

    #[test]
    fn argument_formatting_does_not_change_the_form() {
        assert_eq!(
            canonical_json("{\"b\": 1, \"a\": {\"y\": [1, 2], \"x\": null}}"),
            canonical_json("{\"a\":{\"x\":null,\"y\":[1,2]},\"b\":1}")
        );
        assert_eq!(canonical_json("not json"), "not json");
    }

    #[test]
    fn numbers_keep_their_text_in_the_form() {
        // Integers and shortest-form floats read as they did when numbers
        // were f64s: the cache keys of ordinary arguments did not change.
        assert_eq!(
            canonical_json(r#"{"b": [1, -2, 0.5, 2.25], "a": 18446744073709551615}"#),
            r#"{"a":18446744073709551615,"b":[1,-2,0.5,2.25]}"#
        );
        // Two big integers an f64 would make one are two forms, not one key.
        assert_ne!(
            canonical_json("[123456789012345678901234567890]"),
            canonical_json("[123456789012345678901234567891]")
        );
        // Kept as written: `1.10` and `1.1` are two forms (they were one).
        assert_eq!(canonical_json("[1.10, 1e5]"), "[1.10,1e+5]");
    }

    fn settings() -> KeySettings<'static> {
        KeySettings {
            writer: "heuristic",
            model: None,
            prior: None,
            limit: 100,
            counting: "o200k_base".into(),
            instructions: None,
            extra: String::new(),
        }
    }

    #[test]
    fn pairing_is_part_of_the_form_and_ids_are_not() {
        let thread = |first: &str, second: &str, ids: [&str; 2]| {
            let messages = vec![
                json!({"role": "user", "content": "go"}),
                json!({"role": "assistant", "content": null, "tool_calls": [
                    {"id": ids[0], "type": "function", "function": {"name": "run", "arguments": "{\"command\":\"a\"}"}},
                    {"id": ids[1], "type": "function", "function": {"name": "run", "arguments": "{\"command\":\"b\"}"}}
                ]}),
                json!({"role": "tool", "tool_call_id": first, "content": "exit status: 1"}),
                json!({"role": "tool", "tool_call_id": second, "content": "exit status: 0"}),
            ];
            let t = parse(RawThread {
                format: Some(WireFormat::OpenAi),
                messages: &messages,
                ..Default::default()
            })
            .unwrap();
            hashes(&canonical(&t.messages), &settings()).0
        };
        let ab = thread("x", "y", ["x", "y"]);
        assert_eq!(ab, thread("p", "q", ["p", "q"]), "ids are wire detail");
        assert_ne!(
            ab,
            thread("y", "x", ["x", "y"]),
            "which result answers which call is not"
        );
    }

    #[test]
    fn the_last_prefix_hash_is_the_key() {
        let messages = vec![
            json!({"role": "user", "content": "a"}),
            json!({"role": "assistant", "content": "b"}),
        ];
        let t = parse(RawThread {
            messages: &messages,
            ..Default::default()
        })
        .unwrap();
        let (key, prefixes) = hashes(&canonical(&t.messages), &settings());
        assert_eq!(prefixes.len(), 2);
        assert_eq!(prefixes.last(), Some(&key));
        let (first, _) = hashes(&canonical(&t.messages[..1]), &settings());
        assert_eq!(prefixes[0], first);
        let other = KeySettings {
            limit: 101,
            ..settings()
        };
        assert_ne!(hashes(&canonical(&t.messages), &other).0, key);
    }
}
