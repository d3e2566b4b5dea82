//! The one entry point from wire to model: a request's thread parts,
//! borrowed or owned, parsed in the detected (or given) format and validated.

use std::borrow::Cow;

use serde_json::Value;
use serde_json::value::RawValue;

use super::outline::{Item, Outline, Outlined, Seen, anthropic_only};
use super::validate::check;
use super::wire::{Items, ParseItem, ParseSystem, parse_thread};
use super::{
    FieldError, Message, Thread, WireFormat, anthropic, compact, openai, responses, validate,
};

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
/// copy of a long thread costs as much as the parse); or each message as its
/// JSON text (a `&RawValue` borrowed from the body, or a `Box<RawValue>`),
/// to [`outline`].
#[derive(Debug, Clone, Default)]
pub struct OwnedThread<M = Value> {
    pub format: Option<WireFormat>,
    pub messages: Vec<M>,
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
    let format = format.unwrap_or_else(|| {
        detect(system.as_deref(), || {
            messages.iter().any(|m| anthropic_only(m))
        })
    });
    let tools = tool_list(tools.map(Cow::into_owned))?;
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
    let (parse_system, parse_item, field) = parsers(format);
    parse_thread(system, parse_system, items, field, parse_item)
}

/// The tool schemas as sent (null is none).
fn tool_list(tools: Option<Value>) -> Result<Vec<Value>, Vec<FieldError>> {
    match tools {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => Ok(items),
        Some(_) => {
            let why = "must be an array of tool definitions";
            Err(vec![FieldError::new("/tools", why)])
        }
    }
}

/// A top-level `system`, or a block only Anthropic has, means Anthropic.
fn detect(system: Option<&Value>, anthropic_block: impl FnOnce() -> bool) -> WireFormat {
    if system.is_some_and(|s| !s.is_null()) || anthropic_block() {
        WireFormat::Anthropic
    } else {
        WireFormat::OpenAi
    }
}

/// How a format's system prompt and items are parsed, and its items' field.
fn parsers<'a>(format: WireFormat) -> (ParseSystem<'a>, ParseItem<'a>, &'static str) {
    match format {
        WireFormat::OpenAi => (openai::parse_system, openai::parse_message, "messages"),
        WireFormat::Anthropic => (
            anthropic::parse_system,
            anthropic::parse_message,
            "messages",
        ),
        WireFormat::Responses => (
            responses::parse_instructions,
            responses::parse_item,
            "input",
        ),
    }
}

/// [`parse_owned`] with the messages `seen` before recognised from their JSON
/// text and kept as their record: only the others are parsed (and outlined).
/// Checked as [`parse_owned`] checks, by the same rules ([`Checked`]).
pub fn outline<S: Seen, M: std::ops::Deref<Target = RawValue>>(
    raw: OwnedThread<M>,
    seen: &S,
) -> Result<Outlined<S::Record>, Vec<FieldError>> {
    let keys: Vec<(u128, Option<S::Record>)> = raw
        .messages
        .iter()
        .map(|m| {
            let key = seen.key(m.get());
            (key, seen.get(key))
        })
        .collect();
    // Parsed to detect the format, kept for the parse.
    let mut values: Vec<Option<Value>> = Vec::new();
    let format = match raw.format {
        Some(format) => format,
        None => detect(raw.system.as_ref(), || {
            values.resize_with(keys.len(), || None);
            let mut messages = keys.iter().zip(&raw.messages).enumerate();
            messages.any(|(i, ((_, known), m))| match known {
                Some(r) => r.as_ref().anthropic,
                None => {
                    let value = compact::from_slice(m.get().as_bytes()).ok();
                    let hint = value.as_ref().is_some_and(anthropic_only);
                    values[i] = value;
                    hint
                }
            })
        }),
    };
    let tools = tool_list(raw.tools)?;
    let (parse_system, parse_item, field) = parsers(format);
    let mut items = Items::new(field, parse_item);
    let system = items.system(raw.system.map(Cow::Owned), parse_system);
    let mut messages = Vec::with_capacity(keys.len());
    for (i, ((key, known), json)) in keys.into_iter().zip(raw.messages).enumerate() {
        if let Some(r) = known.filter(|r| r.as_ref().format == format) {
            messages.push(Item::Before(r));
            continue;
        }
        let value = match values.get_mut(i).and_then(Option::take) {
            Some(v) => v,
            None => match compact::from_slice(json.get().as_bytes()) {
                Ok(v) => v,
                Err(e) => {
                    items.error(i, e.to_string());
                    continue;
                }
            },
        };
        drop(json);
        if let Some(message) = items.item(i, Cow::Owned(value)) {
            let outline = Outline::of(&message, format);
            messages.push(Item::New {
                key,
                message: Box::new(message),
                outline,
            });
        }
    }
    items.finish()?;
    let outlines: Vec<&Outline> = messages.iter().map(Item::outline).collect();
    check(format, &outlines)?;
    Ok(Outlined {
        format,
        system,
        messages,
        tools,
    })
}
