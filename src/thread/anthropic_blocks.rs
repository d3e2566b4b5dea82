//! Anthropic Messages content blocks -> parts.

use serde_json::Value;

use super::wire::{compaction, not_a, object, opaque, string};
use super::{FieldError, MediaKind, Part, ToolCall, ToolResult, echo};

const BLOCK_TYPES: &str = "text, image, document, search_result, tool_use, tool_result, thinking, redacted_thinking, server_tool_use, mcp_tool_use, *_tool_result, container_upload, compaction";

/// The provider's own tool and retrieval blocks, kept verbatim (use and result share a message).
fn is_server_block(kind: &str) -> bool {
    matches!(
        kind,
        "server_tool_use" | "mcp_tool_use" | "search_result" | "container_upload"
    ) || (kind.ends_with("_tool_result") && kind != "tool_result")
}

/// Content blocks; `top` is false inside a tool_result, where tool blocks may not nest.
pub fn parse_blocks(
    blocks: &[Value],
    at: &str,
    top: bool,
    errs: &mut Vec<FieldError>,
) -> Vec<Part> {
    blocks
        .iter()
        .enumerate()
        .filter_map(|(j, b)| parse_block(b, &format!("{at}/{j}"), top, errs))
        .collect()
}

fn parse_block(b: &Value, at: &str, top: bool, errs: &mut Vec<FieldError>) -> Option<Part> {
    object(b, "a content block", at, errs)?;
    let kind = string(b, "type", at, errs)?;
    match kind.as_str() {
        "text" => string(b, "text", at, errs).map(Part::Text),
        "image" => {
            require_object(b, "source", at, errs)?;
            Some(Part::Media(MediaKind::Image { low_detail: false }))
        }
        "document" => {
            require_object(b, "source", at, errs)?;
            Some(Part::Media(MediaKind::Document))
        }
        "thinking" => string(b, "thinking", at, errs).map(Part::Thinking),
        "redacted_thinking" => string(b, "data", at, errs).map(Part::RedactedThinking),
        "tool_use" if top => parse_tool_use(b, at, errs),
        "tool_result" if top => parse_tool_result(b, at, errs),
        "compaction" => Some(compaction(b)),
        k if is_server_block(k) => Some(opaque(k, b)),
        "tool_use" | "tool_result" => {
            errs.push(FieldError::new(
                format!("{at}/type"),
                format!("a {kind} block cannot appear inside a tool_result"),
            ));
            None
        }
        other => {
            errs.push(FieldError::new(
                format!("{at}/type"),
                format!(
                    "unknown content block type `{}`; expected one of {BLOCK_TYPES}",
                    echo(other)
                ),
            ));
            None
        }
    }
}

/// A tool_use block, its `input` kept as JSON arguments (as in Chat Completions).
fn parse_tool_use(b: &Value, at: &str, errs: &mut Vec<FieldError>) -> Option<Part> {
    let id = string(b, "id", at, errs);
    let name = string(b, "name", at, errs);
    let input = require_object(b, "input", at, errs).map(Value::to_string);
    Some(Part::ToolCall(ToolCall {
        id: id?,
        name: name?,
        arguments: input?,
        pointer: format!("{at}/id"),
    }))
}

/// A tool_result block; only a missing `tool_use_id` drops it (it pairs with nothing).
fn parse_tool_result(b: &Value, at: &str, errs: &mut Vec<FieldError>) -> Option<Part> {
    let call_id = string(b, "tool_use_id", at, errs);
    let content = result_content(b, at, errs);
    let is_error = is_error(b, at, errs);
    Some(Part::ToolResult(ToolResult {
        call_id: call_id?,
        content,
        is_error,
        pointer: format!("{at}/tool_use_id"),
    }))
}

fn result_content(b: &Value, at: &str, errs: &mut Vec<FieldError>) -> Vec<Part> {
    match b.get("content") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(s)) => vec![Part::Text(s.clone())],
        Some(Value::Array(inner)) => parse_blocks(inner, &format!("{at}/content"), false, errs),
        Some(other) => {
            errs.push(not_a(
                format!("{at}/content"),
                "a string or an array of blocks",
                other,
            ));
            Vec::new()
        }
    }
}

fn is_error(b: &Value, at: &str, errs: &mut Vec<FieldError>) -> bool {
    match b.get("is_error") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(v)) => *v,
        Some(_) => {
            errs.push(FieldError::new(
                format!("{at}/is_error"),
                "must be a boolean",
            ));
            false
        }
    }
}

fn require_object<'v>(
    b: &'v Value,
    key: &str,
    at: &str,
    errs: &mut Vec<FieldError>,
) -> Option<&'v Value> {
    let v = b.get(key).filter(|v| v.is_object());
    if v.is_none() {
        errs.push(FieldError::new(
            format!("{at}/{key}"),
            "is required and must be an object",
        ));
    }
    v
}
