//! OpenAI Chat Completions messages -> the internal model.

use std::borrow::Cow;

use serde_json::Value;

use super::wire::{Content, iteration, message, not_a, object, opt_string, parse_role, string};
use super::{FieldError, MediaKind, Message, Part, Role, ToolCall, ToolResult, echo};

const ROLES: [Role; 6] = [
    Role::System,
    Role::Developer,
    Role::User,
    Role::Assistant,
    Role::Tool,
    Role::Function,
];
const PART_TYPES: &str = "text, image_url, input_audio, file, refusal";

/// Chat Completions has no top-level system prompt: a system message is one.
pub fn parse_system(_: Cow<'_, Value>, errs: &mut Vec<FieldError>) -> Option<Message> {
    errs.push(FieldError::new(
        "/system",
        "a top-level `system` belongs to the Anthropic format; in OpenAI format send a system message",
    ));
    None
}

/// One message, kept as its `raw`; each step adds its errors (all reported at once).
pub fn parse_message(
    source: Cow<'_, Value>,
    at: &str,
    errs: &mut Vec<FieldError>,
) -> Option<Message> {
    let m: &Value = &source;
    object(m, "a message", at, errs)?;
    let before = errs.len();
    let role = parse_role(m, at, &ROLES, errs)?;
    let name = opt_string(m, "name", at, errs);
    let mut content = parse_content(m, role, at, errs);
    parse_calls(m, role, at, &mut content, errs);
    if role == Role::Tool {
        content = tool_result(m, at, content, errs);
    }
    let iteration = iteration(m, at, errs);
    (errs.len() == before).then(|| Message {
        name,
        ..message(role, content, iteration, source)
    })
}

/// The `content` as parts; only an assistant may leave it null (calls alone).
fn parse_content(m: &Value, role: Role, at: &str, errs: &mut Vec<FieldError>) -> Content {
    // Written only where it is read: most messages have neither errors nor parts.
    let content_at = || format!("{at}/content");
    let (parts, plain) = match m.get("content") {
        None | Some(Value::Null) => {
            if !matches!(role, Role::Assistant) {
                errs.push(FieldError::new(
                    content_at(),
                    format!("is required for a {} message", role.as_str()),
                ));
            }
            (Vec::new(), true)
        }
        Some(Value::String(s)) => (vec![Part::Text(s.clone())], true),
        Some(Value::Array(items)) => {
            let content_at = content_at();
            let parts = items
                .iter()
                .enumerate()
                .filter_map(|(j, p)| parse_part(p, &format!("{content_at}/{j}"), errs))
                .collect();
            (parts, false)
        }
        Some(other) => {
            errs.push(not_a(
                content_at(),
                "a string, an array of parts or null",
                other,
            ));
            (Vec::new(), false)
        }
    };
    Content { parts, plain }
}

/// `tool_calls` and the legacy `function_call`: not plain (no official count).
fn parse_calls(m: &Value, role: Role, at: &str, content: &mut Content, errs: &mut Vec<FieldError>) {
    if let Some(calls) = m.get("tool_calls").filter(|v| !v.is_null()) {
        content.plain = false;
        if role != Role::Assistant {
            errs.push(FieldError::new(
                format!("{at}/tool_calls"),
                "only assistant messages carry tool calls",
            ));
        } else if let Some(calls) = calls.as_array() {
            for (j, c) in calls.iter().enumerate() {
                if let Some(call) = parse_tool_call(c, &format!("{at}/tool_calls/{j}"), errs) {
                    content.parts.push(Part::ToolCall(call));
                }
            }
        } else {
            errs.push(FieldError::new(
                format!("{at}/tool_calls"),
                "must be an array",
            ));
        }
    }
    if let Some(fc) = m.get("function_call").filter(|v| !v.is_null()) {
        content.plain = false;
        let fat = format!("{at}/function_call");
        let name = string(fc, "name", &fat, errs).unwrap_or_default();
        let arguments = string(fc, "arguments", &fat, errs).unwrap_or_default();
        content.parts.push(Part::FunctionCall { name, arguments });
    }
}

/// A tool message's parts as one tool result, as the other formats have it.
fn tool_result(m: &Value, at: &str, content: Content, errs: &mut Vec<FieldError>) -> Content {
    let call_id = string(m, "tool_call_id", at, errs).unwrap_or_default();
    Content {
        parts: vec![Part::ToolResult(ToolResult {
            call_id,
            content: content.parts,
            is_error: false,
            pointer: format!("{at}/tool_call_id"),
        })],
        plain: false,
    }
}

fn parse_tool_call(c: &Value, at: &str, errs: &mut Vec<FieldError>) -> Option<ToolCall> {
    if !c.is_object() {
        errs.push(FieldError::new(at, "a tool call must be an object"));
        return None;
    }
    let id = string(c, "id", at, errs);
    // A `custom` call carries free-form `input` instead of JSON `arguments`.
    let (key, text, shape) = match opt_string(c, "type", at, errs).as_deref() {
        None | Some("function") => ("function", "arguments", "`name` and `arguments`"),
        Some("custom") => ("custom", "input", "`name` and `input`"),
        Some(other) => {
            errs.push(FieldError::new(
                format!("{at}/type"),
                format!(
                    "unsupported tool call type `{}`; expected `function` or `custom`",
                    echo(other)
                ),
            ));
            return None;
        }
    };
    let fat = format!("{at}/{key}");
    let Some(body) = c.get(key).filter(|f| f.is_object()) else {
        errs.push(FieldError::new(
            fat,
            format!("is required and must be an object with {shape}"),
        ));
        return None;
    };
    let name = string(body, "name", &fat, errs);
    let arguments = string(body, text, &fat, errs);
    Some(ToolCall {
        id: id?,
        name: name?,
        arguments: arguments?,
        pointer: format!("{at}/id"),
    })
}

fn parse_part(p: &Value, at: &str, errs: &mut Vec<FieldError>) -> Option<Part> {
    object(p, "a content part", at, errs)?;
    let kind = string(p, "type", at, errs)?;
    match kind.as_str() {
        "text" => string(p, "text", at, errs).map(Part::Text),
        "refusal" => string(p, "refusal", at, errs).map(Part::Refusal),
        "image_url" => {
            let Some(image) = p.get("image_url").filter(|v| v.is_object()) else {
                errs.push(FieldError::new(
                    format!("{at}/image_url"),
                    "is required and must be an object with `url`",
                ));
                return None;
            };
            string(image, "url", &format!("{at}/image_url"), errs)?;
            let low_detail = image.get("detail").and_then(Value::as_str) == Some("low");
            Some(Part::Media(MediaKind::Image { low_detail }))
        }
        "input_audio" => Some(Part::Media(MediaKind::Audio)),
        "file" => Some(Part::Media(MediaKind::File)),
        other => {
            errs.push(FieldError::new(
                format!("{at}/type"),
                format!(
                    "unknown content part type `{}`; expected one of {PART_TYPES}",
                    echo(other)
                ),
            ));
            None
        }
    }
}
