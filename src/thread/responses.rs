//! OpenAI Responses API input (`instructions` + `input` items) -> the internal
//! model, one item per [`Message`]. An unknown item type is kept verbatim, not
//! rejected: the API grows them often, and only the pairing matters here.

use std::borrow::Cow;

use serde_json::Value;

use super::wire::{
    Content, compaction, iteration, message, not_a, object, opaque, opt_string, parse_role, string,
};
use super::{FieldError, MediaKind, Message, Part, Role, ToolCall, ToolResult};

const ROLES: [Role; 4] = [Role::User, Role::Assistant, Role::System, Role::Developer];

/// Items that set the conversation's settings and tools, read as
/// instructions: kept verbatim and in order, never summarized. The API
/// emits `configuration_update` right after its compaction item; a
/// `compaction_trigger` must stay the final item (nothing is put after it).
const INSTRUCTION_ITEMS: [&str; 3] = [
    "configuration_update",
    "additional_tools",
    "compaction_trigger",
];

/// Items whose calls pair with a `{type}_output` item by `call_id`.
const CALL_ITEMS: [&str; 3] = ["function_call", "custom_tool_call", "computer_call"];

/// `instructions`: a string, or input items (kept as their parts).
pub fn parse_instructions(source: Cow<'_, Value>, errs: &mut Vec<FieldError>) -> Option<Message> {
    let parts = match source.as_ref() {
        Value::String(text) => vec![Part::Text(text.clone())],
        Value::Array(items) => {
            let mut parts = Vec::new();
            for (j, item) in items.iter().enumerate() {
                content_parts(
                    item.get("content"),
                    &format!("/instructions/{j}/content"),
                    &mut parts,
                    errs,
                );
            }
            parts
        }
        other => {
            errs.push(not_a(
                "/instructions",
                "a string or an array of input items",
                other,
            ));
            return None;
        }
    };
    let content = Content {
        parts,
        plain: false,
    };
    Some(message(Role::System, content, None, source))
}

/// One item, kept as its `raw`.
pub fn parse_item(source: Cow<'_, Value>, at: &str, errs: &mut Vec<FieldError>) -> Option<Message> {
    let m: &Value = &source;
    object(m, "an input item", at, errs)?;
    let before = errs.len();
    let kind = opt_string(m, "type", at, errs);
    let (role, parts) = match kind.as_deref() {
        None | Some("message") => {
            let role = parse_role(m, at, &ROLES, errs)?;
            let mut parts = Vec::new();
            let content = m.get("content");
            if content.is_none_or(Value::is_null) {
                errs.push(FieldError::new(format!("{at}/content"), "is required"));
            }
            content_parts(content, &format!("{at}/content"), &mut parts, errs);
            (role, parts)
        }
        Some("reasoning") => (Role::Assistant, reasoning(m)),
        Some("compaction") => (Role::Assistant, vec![compaction(m)]),
        Some(k) if INSTRUCTION_ITEMS.contains(&k) => (Role::Developer, vec![opaque(k, m)]),
        Some(k) if CALL_ITEMS.contains(&k) => {
            let call = call(m, k, at, errs)?;
            (Role::Assistant, vec![Part::ToolCall(call)])
        }
        Some(k) if is_call_output(k) => {
            let result = output(m, at, errs)?;
            (Role::Tool, vec![Part::ToolResult(result)])
        }
        Some(k) => {
            // Outputs of server-side calls read as the tool's side of the turn.
            let role = match k.ends_with("_output") {
                true => Role::Tool,
                false => Role::Assistant,
            };
            (role, vec![opaque(k, m)])
        }
    };
    let iteration = iteration(m, at, errs);
    // Never exact: the API publishes no per-item formula.
    let content = Content {
        parts,
        plain: false,
    };
    (errs.len() == before).then(|| message(role, content, iteration, source))
}

fn is_call_output(kind: &str) -> bool {
    kind.strip_suffix("_output")
        .is_some_and(|call| CALL_ITEMS.contains(&call))
}

/// A message's `content` (or a tool output): a string, or content parts.
fn content_parts(
    content: Option<&Value>,
    at: &str,
    parts: &mut Vec<Part>,
    errs: &mut Vec<FieldError>,
) {
    match content {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) => parts.push(Part::Text(s.clone())),
        Some(Value::Array(items)) => {
            for (j, p) in items.iter().enumerate() {
                if let Some(part) = content_part(p, &format!("{at}/{j}"), errs) {
                    parts.push(part);
                }
            }
        }
        Some(other) => errs.push(not_a(at, "a string or an array of content parts", other)),
    }
}

fn content_part(p: &Value, at: &str, errs: &mut Vec<FieldError>) -> Option<Part> {
    object(p, "a content part", at, errs)?;
    let kind = string(p, "type", at, errs)?;
    match kind.as_str() {
        "input_text" | "output_text" | "text" => string(p, "text", at, errs).map(Part::Text),
        "refusal" => string(p, "refusal", at, errs).map(Part::Refusal),
        "input_image" => {
            let low_detail = p.get("detail").and_then(Value::as_str) == Some("low");
            Some(Part::Media(MediaKind::Image { low_detail }))
        }
        "input_file" => Some(Part::Media(MediaKind::File)),
        "input_audio" => Some(Part::Media(MediaKind::Audio)),
        other => Some(opaque(other, p)),
    }
}

/// A call item: its `call_id` pairs it with its output.
fn call(m: &Value, kind: &str, at: &str, errs: &mut Vec<FieldError>) -> Option<ToolCall> {
    let id = string(m, "call_id", at, errs);
    let (name, arguments) = match kind {
        "function_call" => (
            string(m, "name", at, errs),
            string(m, "arguments", at, errs),
        ),
        "custom_tool_call" => (string(m, "name", at, errs), string(m, "input", at, errs)),
        // A computer action is named by its item type.
        _ => (
            Some(kind.to_string()),
            Some(m.get("action").map(Value::to_string).unwrap_or_default()),
        ),
    };
    Some(ToolCall {
        id: id?,
        name: name?,
        arguments: arguments?,
        pointer: format!("{at}/call_id"),
    })
}

fn output(m: &Value, at: &str, errs: &mut Vec<FieldError>) -> Option<ToolResult> {
    let call_id = string(m, "call_id", at, errs);
    let mut content = Vec::new();
    match m.get("output") {
        None => errs.push(FieldError::new(format!("{at}/output"), "is required")),
        // A computer screenshot: an object, kept verbatim.
        Some(v @ Value::Object(_)) => content.push(opaque("output", v)),
        other => content_parts(other, &format!("{at}/output"), &mut content, errs),
    }
    Some(ToolResult {
        call_id: call_id?,
        content,
        is_error: false,
        pointer: format!("{at}/call_id"),
    })
}

/// A reasoning item: its texts as thinking, its encrypted content redacted.
fn reasoning(m: &Value) -> Vec<Part> {
    let mut texts = Vec::new();
    for key in ["summary", "content"] {
        if let Some(items) = m.get(key).and_then(Value::as_array) {
            texts.extend(
                items
                    .iter()
                    .filter_map(|s| s.get("text").and_then(Value::as_str)),
            );
        }
    }
    let mut parts = Vec::new();
    if !texts.is_empty() {
        parts.push(Part::Thinking(texts.join("\n")));
    }
    if let Some(data) = m.get("encrypted_content").and_then(Value::as_str) {
        parts.push(Part::RedactedThinking(data.to_string()));
    }
    parts
}
