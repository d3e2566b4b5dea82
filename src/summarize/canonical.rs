//! The canonical form of a span, and its content hash.
//!
//! The summarizers read the canonical form, never the caller's messages, and
//! the cache key hashes exactly that form plus every setting that shapes the
//! text. So whatever the key ignores cannot change a summary: two requests
//! with the same key get the same bytes, whichever replica computes them.
//!
//! The form leaves out what is wire detail, so the same conversation sent in
//! either format, formatted any way, has one form:
//! - tool-call ids become their order of appearance (`call_0`, `call_1`, …)
//!   and each result names the call it answers that way, so the pairing is
//!   kept while the provider's ids are not;
//! - tool results are messages of their own, whether the wire grouped them
//!   into one `user` message (Anthropic) or not (OpenAI);
//! - tool-call arguments are JSON with sorted keys and no whitespace;
//! - the raw JSON, JSON pointers, `name`, and the exactness flag are dropped;
//! - instruction messages (a mid-conversation system or developer message)
//!   are left out: compression keeps them verbatim beside the summary.

use std::collections::HashMap;

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::encode::{self, field};

use crate::thread::{Message, Part, Role, ToolResult};

/// Bumped whenever the canonical form, the hashed settings, or what a
/// summarizer reads of them change (v3: thinking is no longer read; v4:
/// nor are instruction messages, which stay beside the summary; v5: an
/// explicit encoding of each message and setting, not `Debug`; v6: every
/// summary is repaired with the anchors it missed, see `receipt`; v7: so
/// is each new entry of a per-iteration injection, and a model's text
/// gives way to the list when it leaves it too little room).
pub const KEY_VERSION: &str = "condense-summary-v7";

/// `span` in canonical form (see the module docs).
pub fn canonical(span: &[Message]) -> Vec<Message> {
    canonical_with_ends(span).0
}

/// [`canonical`], and for each canonical message the end (exclusive) of
/// the caller's message it came from, relative to `span`: a prefix of the
/// canonical form that ends at a caller's message boundary maps back to it.
pub fn canonical_with_ends(span: &[Message]) -> (Vec<Message>, Vec<usize>) {
    let mut ids: HashMap<&str, String> = HashMap::new();
    let mut external = 0usize;
    let mut out = Vec::with_capacity(span.len());
    let mut ends = Vec::with_capacity(span.len());
    for (i, m) in span.iter().enumerate() {
        // Instructions are kept verbatim beside a summary, never read into
        // one: they have no canonical form (and no end of their own).
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
    /// Writer-specific settings (the LLM's window and transcript limits,
    /// the iteration of each message).
    pub extra: String,
}

/// The content hash of a summary of `span` (canonical) and its rolling
/// prefix hashes: entry `i` covers `span[..=i]` under the same settings. A
/// cached summary is indexed by the last one, so a longer thread finds the
/// summary of its longest already-summarized prefix with one lookup. One
/// pass over the span computes both.
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
    // Every field a summarizer can read, by name (see `encode`).
    let prefixes: Vec<String> = span
        .iter()
        .map(|m| {
            encode::message(&mut h, m);
            hex(h.clone().finalize().as_slice())
        })
        .collect();
    let key = prefixes
        .last()
        .cloned()
        .unwrap_or_else(|| hex(seed.finalize().as_slice()));
    (key, prefixes)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
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
