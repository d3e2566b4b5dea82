//! The one entry point from wire to model: a request's thread parts,
//! borrowed or owned, parsed in the detected (or given) format and validated.

use std::borrow::Cow;

use serde_json::Value;

use super::wire::parse_thread;
use super::{FieldError, Message, Thread, WireFormat, anthropic, openai, responses, validate};

/// A request's thread parts, borrowed (each message is copied into its
/// [`Message::raw`]); for Responses, `input` and `instructions`.
#[derive(Debug, Clone, Default)]
pub struct RawThread<'a> {
    pub format: Option<WireFormat>,
    pub messages: &'a [Value],
    pub system: Option<&'a Value>,
    pub tools: Option<&'a Value>,
}

/// The same parts owned: each message moves into its [`Message::raw`] (a
/// copy of a long thread costs as much as the parse).
#[derive(Debug, Clone, Default)]
pub struct OwnedThread {
    pub format: Option<WireFormat>,
    pub messages: Vec<Value>,
    pub system: Option<Value>,
    pub tools: Option<Value>,
}

/// Parses and validates a thread.
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
    let tools = match tools.map(Cow::into_owned) {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items,
        Some(_) => {
            let why = "must be an array of tool definitions";
            return Err(vec![FieldError::new("/tools", why)]);
        }
    };
    let (system, messages) = parse_items(format, system, messages)?;
    let thread = Thread {
        format,
        system,
        messages,
        tools,
    };
    validate(&thread)?;
    Ok(thread)
}

/// A thread's system prompt and items in `format`, parsed but not validated.
pub(super) fn parse_items<'a>(
    format: WireFormat,
    system: Option<Cow<'a, Value>>,
    items: Vec<Cow<'a, Value>>,
) -> Result<(Option<Message>, Vec<Message>), Vec<FieldError>> {
    match format {
        WireFormat::OpenAi => parse_thread(
            system,
            openai::parse_system,
            items,
            "messages",
            openai::parse_message,
        ),
        WireFormat::Anthropic => parse_thread(
            system,
            anthropic::parse_system,
            items,
            "messages",
            anthropic::parse_message,
        ),
        WireFormat::Responses => parse_thread(
            system,
            responses::parse_instructions,
            items,
            "input",
            responses::parse_item,
        ),
    }
}

/// A top-level `system`, or a block only Anthropic has, means Anthropic.
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
