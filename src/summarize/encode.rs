//! The cache key's encoding of a canonical message: every field a
//! summarizer can read, by name, tagged and length-prefixed. Written out
//! rather than taken from `Debug`, so a new field or another toolchain
//! cannot re-key the cache (replicas of two builds would disagree).

use sha2::{Digest, Sha256};

use crate::thread::{MediaKind, Message, Part};

/// A tagged, length-prefixed field: no two sequences of fields hash alike.
pub fn field(h: &mut Sha256, tag: &str, value: &str) {
    h.update(tag.as_bytes());
    h.update((value.len() as u64).to_le_bytes());
    h.update(value.as_bytes());
}

/// Adds canonical message `m` to `h`.
pub fn message(h: &mut Sha256, m: &Message) {
    field(h, "message", m.role.as_str());
    field(h, "name", m.name.as_deref().unwrap_or(""));
    let iteration = m.iteration.map(|i| i.to_string());
    field(h, "iteration", iteration.as_deref().unwrap_or(""));
    parts(h, &m.parts);
}

fn parts(h: &mut Sha256, parts: &[Part]) {
    field(h, "parts", &parts.len().to_string());
    for p in parts {
        part(h, p);
    }
}

fn part(h: &mut Sha256, p: &Part) {
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
            parts(h, &r.content);
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
