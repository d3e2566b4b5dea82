//! Anthropic's preserved thinking on the way to the provider: whether the
//! request has thinking on (an active loop's final thinking must then
//! stay), and the `drop_block` opt-out when compression kept thinking whose
//! prefix changed (see `compress::binding` and README "Preserved thinking").

use serde_json::Value;

use super::Provider;
use crate::compress::AppliedEdit;

/// What the forwarded body needs for thinking kept after a changed prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Binding {
    /// Nothing: no such block, or not Anthropic.
    Keep,
    /// Thinking is on: opt into `drop_block` (and its beta), so the API
    /// drops exactly the stale blocks.
    OptIn,
    /// Thinking is off: no block is required and none is produced, so
    /// every thinking block goes instead (no opt-out needed).
    Strip,
}

impl Binding {
    pub fn of(provider: Provider, json: &Value, drop_block: bool) -> Self {
        match () {
            _ if !drop_block || provider != Provider::Anthropic => Binding::Keep,
            _ if thinking_on(json) => Binding::OptIn,
            _ => Binding::Strip,
        }
    }

    /// Applies it to the body whose thread is `json[field]`; the turns
    /// whose thinking went.
    pub fn apply(self, json: &mut Value, field: &str) -> usize {
        match self {
            Binding::Keep => 0,
            Binding::OptIn => {
                opt_into_drop_block(json);
                0
            }
            Binding::Strip => strip_thinking(json, field),
        }
    }
}

fn is_thinking(b: &Value) -> bool {
    matches!(
        b.get("type").and_then(Value::as_str),
        Some("thinking" | "redacted_thinking")
    )
}

/// Removes every thinking block of `json[field]`'s messages, but from a
/// message that holds nothing else (it would be left empty).
fn strip_thinking(json: &mut Value, field: &str) -> usize {
    let Some(messages) = json.get_mut(field).and_then(Value::as_array_mut) else {
        return 0;
    };
    let mut turns = 0;
    for m in messages {
        let Some(blocks) = m.get_mut("content").and_then(Value::as_array_mut) else {
            continue;
        };
        let kept = blocks.iter().filter(|b| !is_thinking(b)).count();
        if kept > 0 && kept < blocks.len() {
            blocks.retain(|b| !is_thinking(b));
            turns += 1;
        }
    }
    turns
}

/// The beta that lets a request set `thinking.block_binding`.
pub const DROP_BLOCK_BETA: &str = "thinking-binding-controls-2026-08-01";

/// Thinking is on for this request (`thinking.type` `enabled` or
/// `adaptive`): an active loop's final thinking block must then stay.
pub(super) fn thinking_on(json: &Value) -> bool {
    matches!(
        json.pointer("/thinking/type").and_then(Value::as_str),
        Some("enabled" | "adaptive")
    )
}

/// Kept thinking blocks may follow a changed prefix: the API drops the
/// invalid ones instead of refusing the request (see `compress::binding`).
fn opt_into_drop_block(json: &mut Value) {
    if let Some(thinking) = json.get_mut("thinking").and_then(Value::as_object_mut) {
        let binding = thinking
            .entry("block_binding")
            .or_insert_with(|| Value::Object(Default::default()));
        if let Some(b) = binding.as_object_mut() {
            b.insert("prefix_mismatch_behavior".into(), "drop_block".into());
        }
    }
}

pub(super) fn removed_thinking(edits: &[AppliedEdit]) -> usize {
    edits
        .iter()
        .map(|e| match e {
            AppliedEdit::RemoveStaleThinking {
                removed_thinking_turns,
                ..
            } => *removed_thinking_turns,
            _ => 0,
        })
        .sum()
}
