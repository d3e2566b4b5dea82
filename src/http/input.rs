//! Request pieces shared by the thread endpoints.

/// Declares a thread endpoint's request type with the shared fields first
/// (`deny_unknown_fields` rules out `#[serde(flatten)]`). Its messages (or
/// items) are taken as `Value`s, or, after `<'a> Cow<'a, RawValue>;`, as
/// their JSON text borrowed from the body ([`Sent`]).
macro_rules! thread_request {
    ($(#[$m:meta])* pub struct $name:ident { $($body:tt)* }) => {
        $crate::http::input::thread_request! {
            serde_json::Value; $(#[$m])* pub struct $name { $($body)* }
        }
    };
    (<$lt:lifetime> $item:ty, explained as $twin:ident; $(#[$m:meta])* pub struct $name:ident { $($(#[$fm:meta])* pub $field:ident: $ty:ty,)* }) => {
        $crate::http::input::thread_request! {
            @ [$lt] [#[serde(borrow)]] []; $item; $(#[$m])* pub struct $name { $($(#[$fm])* pub $field: $ty,)* }
        }
        $crate::http::input::thread_request! {
            @ [] [] [#[allow(dead_code)]]; serde_json::Value;
            #[doc = concat!("[`", stringify!($name), "`] with its messages as `Value`s: why a body is not one is said as for any request ([`super::extract::parse_borrowed`]).")]
            #[allow(dead_code)]
            pub struct $twin { $($(#[$fm])* pub $field: $ty,)* }
        }
    };
    ($item:ty; $(#[$m:meta])* pub struct $name:ident { $($(#[$fm:meta])* pub $field:ident: $ty:ty,)* }) => {
        $crate::http::input::thread_request! {
            @ [] [] []; $item; $(#[$m])* pub struct $name { $($(#[$fm])* pub $field: $ty,)* }
        }
    };
    (@ [$($lt:lifetime)?] [$(#[$borrow:meta])?] [$(#[$unused:meta])?]; $item:ty; $(#[$m:meta])* pub struct $name:ident { $($(#[$fm:meta])* pub $field:ident: $ty:ty,)* }) => {
        $(#[$m])*
        #[derive(Debug, serde::Deserialize, utoipa::ToSchema)]
        #[serde(deny_unknown_fields)]
        pub struct $name$(<$lt>)? {
            #[serde(default, deserialize_with = "super::input::items")]
            $(#[$borrow])?
            #[schema(schema_with = super::input::messages)]
            pub messages: Option<Vec<$item>>,
            #[serde(default, deserialize_with = "crate::thread::compact::value")]
            #[schema(schema_with = super::input::system)]
            pub system: Option<serde_json::Value>,
            /// A Responses API thread: its items and instructions.
            #[serde(default, deserialize_with = "super::input::item")]
            $(#[$borrow])?
            #[schema(schema_with = super::input::input)]
            pub input: Option<$item>,
            #[serde(default, deserialize_with = "crate::thread::compact::value")]
            #[schema(schema_with = super::input::instructions)]
            pub instructions: Option<serde_json::Value>,
            #[serde(default, deserialize_with = "crate::thread::compact::value")]
            #[schema(schema_with = super::input::tools)]
            pub tools: Option<serde_json::Value>,
            #[schema(schema_with = super::input::format)]
            pub format: Option<crate::thread::WireFormat>,
            /// Model whose tokenizer, calibration and window apply (default
            /// `--default-model`).
            #[serde(default, deserialize_with = "super::input::model_name")]
            #[schema(max_length = 256)]
            pub model: Option<String>,
            /// Overrides the model's encoding, counted as it is (the model's
            /// calibration, e.g. Claude's x1.25, is not applied; the count
            /// becomes an estimate).
            pub encoding: Option<crate::tokens::Encoding>,
            /// `bpe` (default): the encoding; `chars`: ceil(characters /
            /// `chars_per_token`) (`exact: false`). For a verdict or a
            /// compression, absent means the profile's `chars_per_token`, else
            /// `bpe`.
            #[schema(inline)]
            pub method: Option<super::input::MethodName>,
            /// Characters per token for `method: chars` (default 4); alone it
            /// implies `method: chars`; with `method: bpe` it is rejected.
            #[schema(minimum = 0.5, maximum = 20)]
            pub chars_per_token: Option<f64>,
            $($(#[$fm])* pub $field: $ty,)*
        }

        $(#[$unused])?
        impl$(<$lt>)? $name$(<$lt>)? {
            /// The thread's fields, taken out of the request.
            fn thread(&mut self) -> super::input::ThreadFields<$item> {
                super::input::ThreadFields {
                    format: self.format,
                    messages: self.messages.take(),
                    system: self.system.take(),
                    input: self.input.take(),
                    instructions: self.instructions.take(),
                    tools: self.tools.take(),
                }
            }
        }
    };
}
pub(super) use thread_request;

use std::borrow::Cow;

use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;
use serde_json::{Value, json};
use utoipa::openapi::Ref;
use utoipa::openapi::schema::{Array, ArrayBuilder, SchemaType, Type};

use crate::error::ApiError;
use crate::guard::Caller;
use crate::policy::{self, PriorSummary};
use crate::thread::compact::{self, Compact};
use crate::thread::{self, Limits, Outline, Outlined, OwnedThread, Seen, Thread, WireFormat};
use crate::tokens::Method;
use crate::upstream::CountSource;

/// `method` of a request: how strings become token counts.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum MethodName {
    Bpe,
    Chars,
}

/// Longest model name a request may carry (real ones are ~60): it is echoed.
pub const MAX_MODEL_CHARS: usize = 256;

/// A `model` field of at most [`MAX_MODEL_CHARS`] characters.
pub fn model_name<'de, D>(de: D) -> Result<Option<String>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    let name = Option::<String>::deserialize(de)?;
    match name {
        Some(n) if n.chars().count() > MAX_MODEL_CHARS => Err(serde::de::Error::custom(format!(
            "a model name has at most {MAX_MODEL_CHARS} characters"
        ))),
        name => Ok(name),
    }
}

/// An optional field that may be absent but not null (an absent one takes
/// the profile's value).
pub fn not_null<'de, D, T>(de: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(de).map(Some)
}

/// How a request takes each message (or item) of its thread: as a `Value`,
/// or as its JSON text borrowed from the body, to be recognised when it was
/// seen before ([`thread::outline`]).
pub trait Sent<'de>: Sized + std::fmt::Debug {
    fn take<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error>;
    /// `input`'s items: its array's, or its short form's one user message;
    /// else what it is instead.
    fn items(input: Self) -> Result<Vec<Self>, &'static str>;
}

impl<'de> Sent<'de> for Value {
    fn take<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Compact::deserialize(d).map(|c| c.0)
    }

    fn items(input: Self) -> Result<Vec<Self>, &'static str> {
        match input {
            // The API's short form: one user message.
            Value::String(text) => Ok(vec![json!({"role": "user", "content": text})]),
            Value::Array(items) => Ok(items),
            other => Err(thread::type_name(&other)),
        }
    }
}

/// A message's JSON text: borrowed from the body (no copy), or written here
/// (the short form of `input`).
impl<'de: 'a, 'a> Sent<'de> for Cow<'a, RawValue> {
    fn take<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        <&'a RawValue>::deserialize(d).map(Cow::Borrowed)
    }

    fn items(input: Self) -> Result<Vec<Self>, &'static str> {
        let text = input.get();
        match text.as_bytes().first() {
            // The API's short form: one user message.
            Some(b'"') => RawValue::from_string(format!(r#"{{"role":"user","content":{text}}}"#))
                .map(|m| vec![Cow::Owned(m)])
                .map_err(|_| "a string"),
            Some(b'[') => match input {
                Cow::Borrowed(text) => serde_json::from_str::<Vec<&'a RawValue>>(text.get())
                    .map(|items| items.into_iter().map(Cow::Borrowed).collect()),
                Cow::Owned(text) => serde_json::from_str::<Vec<Box<RawValue>>>(text.get())
                    .map(|items| items.into_iter().map(Cow::Owned).collect()),
            }
            .map_err(|_| "an array"),
            Some(b'{') => Err("an object"),
            Some(b'n') => Err("null"),
            Some(b't' | b'f') => Err("a boolean"),
            _ => Err("a number"),
        }
    }
}

/// One [`Sent`] item, for a sequence of them.
struct Taken<T>(T);

impl<'de, T: Sent<'de>> Deserialize<'de> for Taken<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        T::take(d).map(Taken)
    }
}

/// For `#[serde(default, deserialize_with = "items")]`: the messages, without spare room.
pub fn items<'de, D: Deserializer<'de>, T: Sent<'de>>(d: D) -> Result<Option<Vec<T>>, D::Error> {
    let taken = Option::<Vec<Taken<T>>>::deserialize(d)?;
    Ok(taken.map(|v| {
        let mut v: Vec<T> = v.into_iter().map(|t| t.0).collect();
        v.shrink_to_fit();
        v
    }))
}

/// For `#[serde(default, deserialize_with = "item")]`.
pub fn item<'de, D: Deserializer<'de>, T: Sent<'de>>(d: D) -> Result<Option<T>, D::Error> {
    Ok(Option::<Taken<T>>::deserialize(d)?.map(|t| t.0))
}

// The thread fields of a request, whose schemas the wire formats' bodies
// say (written in `thread/schemas.yaml`).

pub fn messages() -> Array {
    ArrayBuilder::new()
        .schema_type(SchemaType::from_iter([Type::Array, Type::Null]))
        .items(Ref::from_schema_name("ThreadMessage"))
        .description(Some("The thread's messages, in the request's wire format."))
        .build()
}

pub fn system() -> Ref {
    Ref::from_schema_name("ThreadSystem")
}

pub fn input() -> Ref {
    Ref::from_schema_name("ResponsesInput")
}

pub fn instructions() -> Ref {
    Ref::from_schema_name("ResponsesInstructions")
}

pub fn tools() -> Ref {
    Ref::from_schema_name("ThreadTools")
}

pub fn format() -> Ref {
    Ref::from_schema_name("ThreadFormat")
}

/// A provider count spends the operator's key: it needs the `provider` permission.
pub fn permitted(requested: Option<CountSource>, caller: Caller) -> Result<(), ApiError> {
    if requested == Some(CountSource::Provider) && !caller.provider {
        return Err(ApiError::Forbidden(
            "`count: \"provider\"` needs an API key with the `provider` permission (the operator's provider key pays for the count); leave `count` out for the local count".into(),
        ));
    }
    Ok(())
}

/// `method` + `chars_per_token` as a [`Method`] (`chars_per_token` alone means
/// `chars`); neither: the profile's `chars_per_token`, else the tokenizer.
pub fn method(
    name: Option<MethodName>,
    chars_per_token: Option<f64>,
    profile: Option<&crate::policy::Profile>,
) -> Result<Method, ApiError> {
    match (
        name,
        chars_per_token,
        profile.and_then(|p| p.chars_per_token),
    ) {
        (None | Some(MethodName::Chars), None, Some(cpt)) => Ok(Method::Chars {
            chars_per_token: cpt,
        }),
        (Some(MethodName::Bpe), Some(_), _) => Err(ApiError::field(
            "/chars_per_token",
            "only applies with `method: \"chars\"`",
        )),
        (Some(MethodName::Bpe), None, _) | (None, None, _) => Ok(Method::Bpe),
        (_, cpt, _) => {
            let cpt = cpt.unwrap_or(4.0);
            if cpt.is_finite() && (0.5..=20.0).contains(&cpt) {
                Ok(Method::Chars {
                    chars_per_token: cpt,
                })
            } else {
                Err(ApiError::field(
                    "/chars_per_token",
                    format!("must be between 0.5 and 20 (3.5 and 4 are usual), got {cpt}"),
                ))
            }
        }
    }
}

/// The thread fields as sent: `messages` (+ `system`) or `input` (+ `instructions`).
#[derive(Debug)]
pub struct ThreadFields<M = Value> {
    pub format: Option<WireFormat>,
    pub messages: Option<Vec<M>>,
    pub system: Option<Value>,
    pub input: Option<M>,
    pub instructions: Option<Value>,
    pub tools: Option<Value>,
}

impl ThreadFields {
    /// Parses the thread within the configured limits (413): the count of
    /// messages before parsing, their characters after.
    pub fn parse(self, limits: &Limits) -> Result<Thread, ApiError> {
        let owned = self.owned()?;
        limits.check_messages(items_format(&owned), owned.messages.len())?;
        let thread = thread::parse_owned(owned)?;
        limits.check_thread(&thread)?;
        Ok(thread)
    }
}

impl ThreadFields<Cow<'_, RawValue>> {
    /// [`ThreadFields::parse`] with the messages `seen` before recognised
    /// from their JSON text, not parsed ([`thread::outline`]); checked by the
    /// same rules and limits.
    pub fn outline<S: Seen>(
        self,
        limits: &Limits,
        seen: &S,
    ) -> Result<Outlined<S::Record>, ApiError> {
        let owned = self.owned()?;
        limits.check_messages(items_format(&owned), owned.messages.len())?;
        let thread = thread::outline(owned, seen)?;
        let outlines: Vec<&Outline> = thread.messages.iter().map(thread::Item::outline).collect();
        limits.check_items(thread.format, thread.system.as_ref(), &outlines)?;
        Ok(thread)
    }

    /// The fields with their messages as `Value`s, for [`ThreadFields::parse`].
    pub fn values(self) -> Result<ThreadFields, ApiError> {
        let value = |m: Cow<'_, RawValue>| {
            compact::from_slice(m.get().as_bytes())
                .map_err(|e| ApiError::MalformedJson(e.to_string()))
        };
        Ok(ThreadFields {
            format: self.format,
            messages: match self.messages {
                Some(m) => Some(m.into_iter().map(value).collect::<Result<_, _>>()?),
                None => None,
            },
            system: self.system,
            input: self.input.map(value).transpose()?,
            instructions: self.instructions,
            tools: self.tools,
        })
    }
}

/// The format a thread's items are counted in before it is parsed: without
/// a format they are `messages` (Responses is told by `input`).
fn items_format<M>(owned: &OwnedThread<M>) -> WireFormat {
    owned.format.unwrap_or(WireFormat::OpenAi)
}

impl<'de, M: Sent<'de>> ThreadFields<M> {
    /// The thread's parts, in the format their field implies.
    fn owned(mut self) -> Result<OwnedThread<M>, ApiError> {
        let responses = self.format == Some(WireFormat::Responses);
        let tools = self.tools.take();
        let owned = |format, messages, system| OwnedThread {
            format,
            messages,
            system,
            tools,
        };
        match (self.messages.take(), self.input.take()) {
            (Some(_), Some(_)) => Err(ApiError::field(
                "/input",
                "send the thread in `messages` (Chat Completions, Anthropic) or in `input` (Responses), not both",
            )),
            (None, None) if responses => Err(ApiError::field(
                "/input",
                "is required: the Responses format sends its items in `input`",
            )),
            (None, None) => Err(ApiError::field(
                "/messages",
                "is required (or `input`, for a Responses API thread)",
            )),
            (Some(_), None) if responses => Err(ApiError::field(
                "/messages",
                "the Responses format sends its items in `input`, not `messages`",
            )),
            (Some(_), None) if self.instructions.is_some() => Err(ApiError::field(
                "/instructions",
                "belongs to the Responses format (with `input`); a Chat Completions thread takes a system message, an Anthropic thread `system`",
            )),
            (Some(messages), None) => Ok(owned(self.format, messages, self.system.take())),
            (None, Some(_)) if self.format.is_some() && !responses => Err(ApiError::field(
                "/format",
                "`input` is a Responses API thread; send `format: \"responses\"` or none",
            )),
            (None, Some(_)) if self.system.is_some() => Err(ApiError::field(
                "/system",
                "belongs to the Anthropic format; a Responses thread takes `instructions`",
            )),
            (None, Some(input)) => {
                let items = M::items(input).map_err(|what| {
                    ApiError::field(
                        "/input",
                        format!("must be a string or an array of items, not {what}"),
                    )
                })?;
                Ok(owned(
                    Some(WireFormat::Responses),
                    items,
                    self.instructions.take(),
                ))
            }
        }
    }
}

/// The warning on a thread without messages, which every provider refuses.
pub fn empty_thread(thread: &Thread) -> Option<String> {
    no_messages(thread.format, thread.messages.len())
}

/// [`empty_thread`] of a thread of `messages` in `format`.
pub fn no_messages(format: WireFormat, messages: usize) -> Option<String> {
    (messages == 0).then(|| {
        let field = match format {
            WireFormat::Responses => "/input",
            _ => "/messages",
        };
        format!("{field} is empty: every provider refuses a thread without messages")
    })
}

/// The summary object a previous compression returned. Only these fields
/// are read; any others are ignored, so the object can be sent back as it
/// was received.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct SummaryInput {
    /// The last index of `messages` the summary covers; must be below the
    /// number of messages.
    pub last_message_idx: usize,
    /// The summary text; its cost is counted as a user message.
    pub content: Option<String>,
    /// The verdict uses the summary's size (+ 4) when `content` is not sent.
    // Said as a usize: u64 would say `format: int64`, which stops at 2^63.
    #[schema(value_type = Option<usize>)]
    pub token_count: Option<u64>,
    /// How many messages the summary stands for (compression extends the
    /// count; default the messages up to `last_message_idx` after the pinned
    /// prefix). The verdict reports it in `last_summary`.
    #[schema(value_type = Option<usize>)]
    pub messages_summarized: Option<u64>,
    /// When the summary was written; the verdict reports it (its first 64
    /// characters) in `last_summary`.
    pub created_at: Option<String>,
}

impl SummaryInput {
    /// Checks the index against the thread, unless the thread holds a summary
    /// message (a compressed thread sent back: its summary wins).
    pub fn into_prior(self, thread: &Thread) -> Result<PriorSummary, ApiError> {
        let messages = thread.messages.len();
        let in_thread = policy::summary_message(thread, thread.pinned_len()).is_some();
        if self.last_message_idx >= messages && !in_thread {
            return Err(ApiError::field(
                "/summary/last_message_idx",
                format!(
                    "{} is past the end of `messages` ({messages} messages)",
                    self.last_message_idx
                ),
            ));
        }
        Ok(PriorSummary {
            last_message_idx: self.last_message_idx,
            content: self.content,
            token_count: self.token_count,
            messages_summarized: self.messages_summarized,
            // Echoed in the status: a short timestamp, never a large blob.
            created_at: self.created_at.map(|t| t.chars().take(64).collect()),
        })
    }
}
