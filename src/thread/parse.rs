//! The one entry point from wire to model: a request's thread parts,
//! borrowed or owned, parsed in the detected (or given) format and validated.

use std::borrow::Cow;

use serde_json::Value;

use super::{FieldError, Thread, WireFormat, anthropic, openai, responses, validate};

/// The parts of a request that describe a thread, before parsing, borrowed:
/// each message is copied into its [`Message::raw`]. For the Responses
/// format, `messages` are its `input` items and `system` its `instructions`.
#[derive(Debug, Clone, Default)]
pub struct RawThread<'a> {
    pub format: Option<WireFormat>,
    pub messages: &'a [Value],
    pub system: Option<&'a Value>,
    pub tools: Option<&'a Value>,
}

/// The same parts owned, as a request handler has them: each message moves
/// into its [`Message::raw`] instead of being copied (a long thread is
/// mostly text, so a copy costs as much as the parse).
#[derive(Debug, Clone, Default)]
pub struct OwnedThread {
    pub format: Option<WireFormat>,
    pub messages: Vec<Value>,
    pub system: Option<Value>,
    pub tools: Option<Value>,
}

/// Parses and validates a thread: the one entry point from wire to model.
pub fn parse(raw: RawThread<'_>) -> Result<Thread, Vec<FieldError>> {
    parse_parts(
        raw.format,
        raw.messages.iter().map(Cow::Borrowed).collect(),
        raw.system.map(Cow::Borrowed),
        raw.tools.map(Cow::Borrowed),
    )
}

/// [`parse`] for owned parts, moving each message into the model.
pub fn parse_owned(raw: OwnedThread) -> Result<Thread, Vec<FieldError>> {
    parse_parts(
        raw.format,
        raw.messages.into_iter().map(Cow::Owned).collect(),
        raw.system.map(Cow::Owned),
        raw.tools.map(Cow::Owned),
    )
}

fn parse_parts(
    format: Option<WireFormat>,
    messages: Vec<Cow<'_, Value>>,
    system: Option<Cow<'_, Value>>,
    tools: Option<Cow<'_, Value>>,
) -> Result<Thread, Vec<FieldError>> {
    let format =
        format.unwrap_or_else(|| detect_in(system.as_deref(), messages.iter().map(|m| m.as_ref())));
    let tools = match tools {
        None => Vec::new(),
        Some(t) => match t.into_owned() {
            Value::Null => Vec::new(),
            Value::Array(items) => items,
            _ => {
                return Err(vec![FieldError::new(
                    "/tools",
                    "must be an array of tool definitions",
                )]);
            }
        },
    };
    let (system, messages) = match format {
        WireFormat::OpenAi => {
            if system.as_deref().is_some_and(|s| !s.is_null()) {
                return Err(vec![FieldError::new(
                    "/system",
                    "a top-level `system` belongs to the Anthropic format; in OpenAI format send a system message",
                )]);
            }
            (None, openai::parse_messages(messages)?)
        }
        WireFormat::Anthropic => anthropic::parse_thread(system, messages)?,
        WireFormat::Responses => responses::parse_thread(system, messages)?,
    };
    let thread = Thread {
        format,
        system,
        messages,
        tools,
    };
    validate(&thread)?;
    Ok(thread)
}

/// A top-level `system`, or any content block only Anthropic has
/// (`tool_use`, `tool_result`, `image`, `document`, `thinking`, ...),
/// means Anthropic. OpenAI's parts are `text`, `image_url`, `input_audio`,
/// `file` and `refusal`, so the sets do not overlap. (The Responses format
/// is told by its own field, `input`, before this is asked.)
pub fn detect(raw: &RawThread<'_>) -> WireFormat {
    detect_in(raw.system, raw.messages.iter())
}

fn detect_in<'a>(
    system: Option<&Value>,
    mut messages: impl Iterator<Item = &'a Value>,
) -> WireFormat {
    const ANTHROPIC_ONLY: [&str; 10] = [
        "tool_use",
        "tool_result",
        "image",
        "document",
        "thinking",
        "redacted_thinking",
        "server_tool_use",
        "web_search_tool_result",
        "search_result",
        "compaction",
    ];
    if system.is_some_and(|s| !s.is_null()) {
        return WireFormat::Anthropic;
    }
    let anthropic_block = messages.any(|m| {
        m.get("content")
            .and_then(Value::as_array)
            .is_some_and(|blocks| {
                blocks.iter().any(|b| {
                    b.get("type")
                        .and_then(Value::as_str)
                        .is_some_and(|t| ANTHROPIC_ONLY.contains(&t))
                })
            })
    });
    if anthropic_block {
        WireFormat::Anthropic
    } else {
        WireFormat::OpenAi
    }
}
