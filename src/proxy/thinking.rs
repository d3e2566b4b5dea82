//! Anthropic's preserved thinking on the way to the provider (see
//! `compress::binding`, docs/compression.md "Preserved thinking").

use serde_json::Value;

use crate::compress::AppliedEdit;
use crate::thread::WireFormat;

/// Whether the forwarded body opts into `drop_block` (and its beta), so the
/// API drops exactly the stale blocks compression kept.
pub(super) fn opts_in(format: WireFormat, json: &Value, drop_block: bool) -> bool {
    drop_block && format == WireFormat::Anthropic && thinking_on(json)
}

/// The beta that lets a request set `thinking.block_binding`.
pub const DROP_BLOCK_BETA: &str = "thinking-binding-controls-2026-08-01";

/// Thinking is on: an active loop's final thinking block must then stay.
pub(super) fn thinking_on(json: &Value) -> bool {
    matches!(
        json.pointer("/thinking/type").and_then(Value::as_str),
        Some("enabled" | "adaptive")
    )
}

/// The API drops invalid kept thinking blocks instead of refusing the request.
pub(super) fn opt_into_drop_block(json: &mut Value) {
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
