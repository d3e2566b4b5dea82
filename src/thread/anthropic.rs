//! Anthropic Messages threads (top-level `system` + messages of blocks) -> the internal model.

use std::borrow::Cow;

use serde_json::Value;

use super::anthropic_blocks::parse_blocks;
use super::wire::{Content, iteration, message, not_a, object, parse_role, string};
use super::{FieldError, Message, Part, Role};

/// `system`: a mid-conversation system message (beta `mid-conversation-system-2026-04-07`).
const ROLES: [Role; 3] = [Role::User, Role::Assistant, Role::System];

pub fn parse_system(source: Cow<'_, Value>, errs: &mut Vec<FieldError>) -> Option<Message> {
    let s: &Value = &source;
    let (parts, plain) = match s {
        Value::String(text) => (vec![Part::Text(text.clone())], true),
        Value::Array(blocks) => {
            let mut parts = Vec::new();
            for (j, b) in blocks.iter().enumerate() {
                let at = format!("/system/{j}");
                if b.get("type").and_then(Value::as_str) != Some("text") {
                    errs.push(FieldError::new(
                        format!("{at}/type"),
                        "system blocks must be text blocks",
                    ));
                    continue;
                }
                if let Some(t) = string(b, "text", &at, errs) {
                    parts.push(Part::Text(t));
                }
            }
            (parts, false)
        }
        other => {
            errs.push(not_a(
                "/system",
                "a string or an array of text blocks",
                other,
            ));
            return None;
        }
    };
    Some(message(
        Role::System,
        Content { parts, plain },
        None,
        source,
    ))
}

/// One message, kept as its `raw`; each step adds its errors.
pub fn parse_message(
    source: Cow<'_, Value>,
    at: &str,
    errs: &mut Vec<FieldError>,
) -> Option<Message> {
    let m: &Value = &source;
    object(m, "a message", at, errs)?;
    let before = errs.len();
    // Without a role the blocks cannot be placed: its error ends the message.
    let role = parse_role(m, at, &ROLES, errs)?;
    let content_at = format!("{at}/content");
    let content = parse_content(m, &content_at, errs);
    check_placement(role, &content.parts, &content_at, errs);
    let iteration = iteration(m, at, errs);
    (errs.len() == before).then(|| message(role, content, iteration, source))
}

/// The required `content` as parts: a string is plain, blocks are not.
fn parse_content(m: &Value, content_at: &str, errs: &mut Vec<FieldError>) -> Content {
    let (parts, plain) = match m.get("content") {
        Some(Value::String(s)) => (vec![Part::Text(s.clone())], true),
        Some(Value::Array(blocks)) => (parse_blocks(blocks, content_at, true, errs), false),
        Some(other) => {
            errs.push(not_a(content_at, "a string or an array of blocks", other));
            (Vec::new(), false)
        }
        None => {
            errs.push(FieldError::new(content_at, "is required"));
            (Vec::new(), false)
        }
    };
    Content { parts, plain }
}

/// Blocks in the wrong role's message, as the Messages API rejects them.
fn check_placement(role: Role, parts: &[Part], content_at: &str, errs: &mut Vec<FieldError>) {
    if role == Role::System && parts.iter().any(|p| !matches!(p, Part::Text(_))) {
        errs.push(FieldError::new(
            content_at,
            "a system message holds text blocks only",
        ));
    }
    if role == Role::User && parts.iter().any(|p| matches!(p, Part::ToolCall(_))) {
        errs.push(FieldError::new(
            content_at,
            "tool_use blocks belong in assistant messages",
        ));
    }
    if role == Role::Assistant && parts.iter().any(|p| matches!(p, Part::ToolResult(_))) {
        errs.push(FieldError::new(
            content_at,
            "tool_result blocks belong in user messages",
        ));
    }
}
