//! The content hash of a summary: SHA-256 over a canonical form of everything
//! that determines it. The span is taken from the internal model with wire
//! details left out (tool-call ids, how parallel results are grouped into
//! messages, JSON key order and whitespace of arguments), so the same
//! conversation sent in either format, formatted any way, hashes the same.

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::thread::{MediaKind, Message, Part};

/// Bumped whenever the canonical form or the summarizers' output changes.
pub const KEY_VERSION: &str = "condense-summary-v1";

pub struct KeyInput<'a> {
    pub span: &'a [Message],
    pub prior: Option<&'a str>,
    pub strategy: &'a str,
    pub model: Option<&'a str>,
    pub prompt_version: u32,
    pub max_summary_tokens: u64,
    pub instructions: Option<&'a str>,
}

pub fn content_hash(k: &KeyInput<'_>) -> String {
    let mut h = seed(k);
    for m in k.span {
        feed(&mut h, m);
    }
    hex(h.finalize().as_slice())
}

/// The rolling hash after each message of the span: entry `i` covers
/// `span[..=i]` under the same settings and prior. A cached summary is
/// indexed by the last one, so a longer thread finds the summary of its
/// longest already-summarized prefix with one lookup.
pub fn prefix_hashes(k: &KeyInput<'_>) -> Vec<String> {
    let mut h = seed(k);
    k.span
        .iter()
        .map(|m| {
            feed(&mut h, m);
            hex(h.clone().finalize().as_slice())
        })
        .collect()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn feed(h: &mut Sha256, m: &Message) {
    let mut field = |tag: &str, value: &str| {
        h.update(tag.as_bytes());
        h.update((value.len() as u64).to_le_bytes());
        h.update(value.as_bytes());
    };
    for p in &m.parts {
        canonical_part(m.role.as_str(), p, &mut field);
    }
}

fn seed(k: &KeyInput<'_>) -> Sha256 {
    let mut h = Sha256::new();
    let mut field = |tag: &str, value: &str| {
        h.update(tag.as_bytes());
        h.update((value.len() as u64).to_le_bytes());
        h.update(value.as_bytes());
    };
    field("v", KEY_VERSION);
    field("strategy", k.strategy);
    field("model", k.model.unwrap_or(""));
    field("prompt", &k.prompt_version.to_string());
    field("max", &k.max_summary_tokens.to_string());
    field("instructions", k.instructions.unwrap_or(""));
    field("prior", k.prior.unwrap_or(""));
    h
}

/// `role` tags text: the message's role, or `result` inside a tool result
/// (an OpenAI `tool` message and an Anthropic `user` block say the same).
fn canonical_part(role: &str, p: &Part, field: &mut impl FnMut(&str, &str)) {
    match p {
        Part::Text(t) => field(role, t),
        Part::Refusal(t) => field("refusal", t),
        Part::Thinking(t) => field("thinking", t),
        Part::RedactedThinking(t) => field("redacted", t),
        Part::Media(kind) => field(
            "media",
            match kind {
                MediaKind::Image { .. } => "image",
                MediaKind::Audio => "audio",
                MediaKind::File => "file",
                MediaKind::Document => "document",
            },
        ),
        Part::ToolCall(c) => {
            field("call", &c.name);
            field("args", &canonical_json(&c.arguments));
        }
        Part::FunctionCall { name, arguments } => {
            field("call", name);
            field("args", &canonical_json(arguments));
        }
        Part::ToolResult(r) => {
            field("result", if r.is_error { "error" } else { "ok" });
            for inner in &r.content {
                canonical_part("result", inner, field);
            }
        }
    }
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
    use super::*;

    #[test]
    fn argument_formatting_does_not_change_the_form() {
        assert_eq!(
            canonical_json("{\"b\": 1, \"a\": {\"y\": [1, 2], \"x\": null}}"),
            canonical_json("{\"a\":{\"x\":null,\"y\":[1,2]},\"b\":1}")
        );
        assert_eq!(canonical_json("not json"), "not json");
    }
}
