//! Anthropic Messages threads (top-level `system` + messages of blocks) -> the internal model.

use std::borrow::Cow;

use serde_json::Value;

use super::wire::{compaction, iteration, opaque, parse_all, string, type_name};
use super::{Bounded, FieldError, MediaKind, Message, Part, Role, ToolCall, ToolResult, echo};

const BLOCK_TYPES: &str = "text, image, document, search_result, tool_use, tool_result, thinking, redacted_thinking, server_tool_use, mcp_tool_use, *_tool_result, container_upload, compaction";

/// Blocks of the provider's own tools and retrieval, kept verbatim: a
/// server tool's use and its result sit in the same assistant message, so
/// keeping messages whole keeps them together.
fn is_server_block(kind: &str) -> bool {
    matches!(
        kind,
        "server_tool_use" | "mcp_tool_use" | "search_result" | "container_upload"
    ) || (kind.ends_with("_tool_result") && kind != "tool_result")
}

pub fn parse_thread(
    system: Option<Cow<'_, Value>>,
    messages: Vec<Cow<'_, Value>>,
) -> Result<(Option<Message>, Vec<Message>), Vec<FieldError>> {
    let mut errs = Bounded::default();
    let mut scratch = Vec::new();
    let system = system
        .filter(|s| !s.is_null())
        .and_then(|s| parse_system(s, &mut scratch));
    errs.absorb(&mut scratch);
    let parsed = parse_all(messages, "messages", &mut errs, parse_message);
    if errs.is_empty() {
        Ok((system, parsed))
    } else {
        Err(errs.finish())
    }
}

fn parse_system(source: Cow<'_, Value>, errs: &mut Vec<FieldError>) -> Option<Message> {
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
            errs.push(FieldError::new(
                "/system",
                format!(
                    "must be a string or an array of text blocks, not {}",
                    type_name(other)
                ),
            ));
            return None;
        }
    };
    Some(Message {
        role: Role::System,
        name: None,
        parts,
        plain,
        iteration: None,
        raw: source.into_owned(),
    })
}

/// Reads `source` and keeps it as the message's `raw` (moved when owned).
fn parse_message(source: Cow<'_, Value>, at: &str, errs: &mut Vec<FieldError>) -> Option<Message> {
    let m: &Value = &source;
    if !m.is_object() {
        errs.push(FieldError::new(
            at,
            format!("a message must be an object, not {}", type_name(m)),
        ));
        return None;
    }
    let before = errs.len();
    let role = match string(m, "role", at, errs)?.as_str() {
        "user" => Role::User,
        "assistant" => Role::Assistant,
        // A mid-conversation system message (beta
        // `mid-conversation-system-2026-04-07`): an instruction that changed
        // during the session, placed where it applies so the cached prefix
        // before it stays as it was.
        "system" => Role::System,
        other => {
            errs.push(FieldError::new(
                format!("{at}/role"),
                format!(
                    "unknown role `{}`; expected user, assistant or system",
                    echo(other)
                ),
            ));
            return None;
        }
    };
    let content_at = format!("{at}/content");
    let (parts, plain) = match m.get("content") {
        Some(Value::String(s)) => (vec![Part::Text(s.clone())], true),
        Some(Value::Array(blocks)) => (parse_blocks(blocks, &content_at, true, errs), false),
        Some(other) => {
            errs.push(FieldError::new(
                &content_at,
                format!(
                    "must be a string or an array of blocks, not {}",
                    type_name(other)
                ),
            ));
            (Vec::new(), false)
        }
        None => {
            errs.push(FieldError::new(&content_at, "is required"));
            (Vec::new(), false)
        }
    };
    if role == Role::System && parts.iter().any(|p| !matches!(p, Part::Text(_))) {
        errs.push(FieldError::new(
            &content_at,
            "a system message holds text blocks only",
        ));
    }
    if role == Role::User && parts.iter().any(|p| matches!(p, Part::ToolCall(_))) {
        errs.push(FieldError::new(
            &content_at,
            "tool_use blocks belong in assistant messages",
        ));
    }
    if role == Role::Assistant && parts.iter().any(|p| matches!(p, Part::ToolResult(_))) {
        errs.push(FieldError::new(
            &content_at,
            "tool_result blocks belong in user messages",
        ));
    }
    let iteration = iteration(m, at, errs);
    (errs.len() == before).then(|| Message {
        role,
        name: None,
        parts,
        plain,
        iteration,
        raw: source.into_owned(),
    })
}

/// Content blocks; `top` is false inside a tool_result, where tool blocks may not nest.
fn parse_blocks(blocks: &[Value], at: &str, top: bool, errs: &mut Vec<FieldError>) -> Vec<Part> {
    blocks
        .iter()
        .enumerate()
        .filter_map(|(j, b)| parse_block(b, &format!("{at}/{j}"), top, errs))
        .collect()
}

/// One content block as a part. The tool blocks have their own steps;
/// inside a tool_result (`top` false) they may not nest.
fn parse_block(b: &Value, at: &str, top: bool, errs: &mut Vec<FieldError>) -> Option<Part> {
    if !b.is_object() {
        errs.push(FieldError::new(
            at,
            format!("a content block must be an object, not {}", type_name(b)),
        ));
        return None;
    }
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

/// A tool_use block as a tool call: its `input` object kept as the call's
/// compact JSON arguments, as a Chat Completions call carries them. Every
/// missing field is reported before the block is dropped.
fn parse_tool_use(b: &Value, at: &str, errs: &mut Vec<FieldError>) -> Option<Part> {
    let id = string(b, "id", at, errs);
    let name = string(b, "name", at, errs);
    let input = match b.get("input") {
        Some(v @ Value::Object(_)) => Some(v.to_string()),
        _ => {
            errs.push(FieldError::new(
                format!("{at}/input"),
                "is required and must be an object",
            ));
            None
        }
    };
    Some(Part::ToolCall(ToolCall {
        id: id?,
        name: name?,
        arguments: input?,
        pointer: format!("{at}/id"),
    }))
}

/// A tool_result block as a tool result: the call it answers, its content
/// and whether it reports an error. Every wrong field is reported, but
/// only a missing `tool_use_id` drops the block (it could pair with nothing).
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

/// A tool_result's `content`: absent, a string, or blocks that may not
/// hold tool blocks themselves.
fn result_content(b: &Value, at: &str, errs: &mut Vec<FieldError>) -> Vec<Part> {
    match b.get("content") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(s)) => vec![Part::Text(s.clone())],
        Some(Value::Array(inner)) => parse_blocks(inner, &format!("{at}/content"), false, errs),
        Some(other) => {
            errs.push(FieldError::new(
                format!("{at}/content"),
                format!(
                    "must be a string or an array of blocks, not {}",
                    type_name(other)
                ),
            ));
            Vec::new()
        }
    }
}

/// A tool_result's `is_error`: false when absent or null.
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

fn require_object(b: &Value, key: &str, at: &str, errs: &mut Vec<FieldError>) -> Option<()> {
    if b.get(key).is_some_and(Value::is_object) {
        Some(())
    } else {
        errs.push(FieldError::new(
            format!("{at}/{key}"),
            "is required and must be an object",
        ));
        None
    }
}
