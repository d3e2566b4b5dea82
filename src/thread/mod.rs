//! The thread model: one type for Chat Completions, Anthropic Messages and
//! Responses conversations, parsed at the boundary ([`parse`]). Each
//! [`Message`] keeps the caller's JSON (`raw`), so unchanged ones go back as sent.

mod anthropic;
mod anthropic_blocks;
mod clearing;
pub mod compact;
mod echo;
mod edit;
mod limits;
mod marker;
mod openai;
mod outline;
mod parse;
mod responses;
mod validate;
mod wire;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use clearing::{Clearing, clear};
pub use echo::{Bounded, MAX_ERRORS, cap, clip_quoted, echo};
pub use edit::{Cut, Keep, cut_to, text_message, thousands, truncate_to};
pub use limits::{Limits, MAX_JSON_NODES, MAX_JSON_VALUES, OverLimit, Shape};
pub use marker::{SummaryMarker, summary_header, summary_text};
pub use outline::{Checked, Item, Outline, Outlined, Seen};
pub use parse::{OwnedThread, RawThread, outline, parse, parse_owned};
pub use validate::{check, validate};
pub use wire::type_name;

/// The wire formats' JSON Schemas, as the parsers here read them: written
/// beside them (they read JSON values, not types that could say a schema)
/// for the API's document (`http::openapi`).
pub const SCHEMAS: &str = include_str!("schemas.yaml");

/// The wire format a thread arrived in (and is answered in): `openai` (Chat
/// Completions), `anthropic` (Messages) or `responses` (the OpenAI Responses
/// API).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum WireFormat {
    #[serde(rename = "openai")]
    OpenAi,
    Anthropic,
    /// OpenAI's Responses API: `input` items and top-level `instructions`.
    Responses,
}

/// What a provider does with thinking whose prefix (everything before it)
/// changed since it was produced: one rule per provider, applied by one
/// mechanism (`compress::binding`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StaleThinking {
    /// Anthropic: refuses the request unless it opts into `drop_block`, and
    /// an active tool loop's final turn must open with its thinking.
    Refused,
    /// OpenAI Responses (newer models): drops the reasoning item without an
    /// error and lists it in `input_transformations` (`prefix_mismatch`).
    Dropped,
}

impl WireFormat {
    /// How the provider treats stale thinking; None for Chat Completions,
    /// whose input carries no reasoning (nothing is bound to a prefix).
    pub fn stale_thinking(self) -> Option<StaleThinking> {
        match self {
            WireFormat::Anthropic => Some(StaleThinking::Refused),
            WireFormat::Responses => Some(StaleThinking::Dropped),
            WireFormat::OpenAi => None,
        }
    }

    /// Anthropic takes a system message inside `messages` only after a user
    /// turn (the initial system prompt is the top-level `system`), so one
    /// never opens a thread; Chat and Responses take instructions anywhere.
    pub fn instructions_follow_user(self) -> bool {
        self == WireFormat::Anthropic
    }

    /// The JSON pointer of the thread's messages in a request body.
    pub fn items_pointer(self) -> &'static str {
        match self {
            WireFormat::Responses => "/input",
            WireFormat::OpenAi | WireFormat::Anthropic => "/messages",
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            WireFormat::OpenAi => "openai",
            WireFormat::Anthropic => "anthropic",
            WireFormat::Responses => "responses",
        }
    }
}

/// Where in the request a problem is (a JSON pointer) and what it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FieldError {
    /// JSON pointer (RFC 6901) into the request body; `""` is the body itself.
    pub pointer: String,
    pub message: String,
}

impl FieldError {
    pub fn new(pointer: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            pointer: pointer.into(),
            message: message.into(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    Developer,
    User,
    Assistant,
    Tool,
    /// OpenAI's legacy `function` role (the answer to a `function_call`).
    Function,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::Developer => "developer",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
            Role::Function => "function",
        }
    }

    /// System and developer messages at the head of a thread are pinned.
    pub fn is_instruction(self) -> bool {
        matches!(self, Role::System | Role::Developer)
    }
}

/// Non-text content whose token cost has no exact formula.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MediaKind {
    Image { low_detail: bool },
    Audio,
    File,
    Document,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// The arguments as the model wrote them (a JSON text).
    pub arguments: String,
    /// JSON pointer of the call's id under its message's (`/tool_calls/0/id`),
    /// for error messages.
    pub pointer: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    pub call_id: String,
    pub content: Vec<Part>,
    pub is_error: bool,
    /// JSON pointer of the result's call id under its message's, for error messages.
    pub pointer: String,
}

// Hashed for what they say, not where they sit (the pointer moves when a
// thread is compressed): the hash keys their count (`tokens::Memo`).
impl std::hash::Hash for ToolCall {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        (&self.id, &self.name, &self.arguments).hash(state);
    }
}

impl std::hash::Hash for ToolResult {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        (&self.call_id, &self.content, self.is_error).hash(state);
    }
}

#[derive(Debug, Clone, PartialEq, Hash)]
pub enum Part {
    Text(String),
    Refusal(String),
    Thinking(String),
    /// Encrypted reasoning: opaque data, counted by its length.
    RedactedThinking(String),
    Media(MediaKind),
    ToolCall(ToolCall),
    ToolResult(ToolResult),
    /// OpenAI's legacy `function_call` on an assistant message.
    FunctionCall {
        name: String,
        arguments: String,
    },
    /// Content condense carries verbatim without reading it (see [`Opaque`]).
    Opaque(Opaque),
}

/// A block or item kept byte for byte and never summarized (server tool
/// blocks, provider compaction, Responses settings items, unknown Responses
/// items); its count an estimate.
#[derive(Debug, Clone, PartialEq, Hash)]
pub struct Opaque {
    /// The block's or item's `type`.
    pub kind: String,
    /// What its count is estimated from: its readable text, or its JSON.
    pub text: String,
    /// Bytes of encrypted content, counted like redacted thinking.
    pub encrypted: usize,
    /// The provider's own compaction: the conversation starts after it.
    pub compaction: bool,
}

impl Part {
    /// A thinking or redacted thinking block.
    pub fn is_thinking(&self) -> bool {
        matches!(self, Part::Thinking(_) | Part::RedactedThinking(_))
    }

    /// Every text of the part a tokenizer reads (tool results recursively).
    pub fn texts<'a>(&'a self, out: &mut Vec<&'a str>) {
        match self {
            Part::Text(t) | Part::Refusal(t) | Part::Thinking(t) => out.push(t),
            Part::ToolCall(c) => out.push(&c.arguments),
            Part::FunctionCall { arguments, .. } => out.push(arguments),
            Part::ToolResult(r) => r.content.iter().for_each(|p| p.texts(out)),
            Part::Opaque(o) => out.push(&o.text),
            Part::RedactedThinking(_) | Part::Media(_) => {}
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    pub role: Role,
    pub name: Option<String>,
    pub parts: Vec<Part>,
    /// A plain string (or null) content and nothing else: the cookbook formula is exact.
    pub plain: bool,
    /// The agent iteration this message belongs to (`metadata.iteration`).
    pub iteration: Option<u64>,
    /// The message exactly as the caller sent it.
    pub raw: Value,
}

impl Message {
    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.parts.iter().filter_map(|p| match p {
            Part::ToolCall(c) => Some(c),
            _ => None,
        })
    }

    pub fn tool_results(&self) -> impl Iterator<Item = &ToolResult> {
        self.parts.iter().filter_map(|p| match p {
            Part::ToolResult(r) => Some(r),
            _ => None,
        })
    }

    /// A Responses item other than a `message`: part of the turn around it.
    pub fn is_item(&self) -> bool {
        self.raw
            .get("type")
            .and_then(Value::as_str)
            .is_some_and(|t| t != "message")
    }

    /// A system or developer message condense did not write: never summarized.
    pub fn is_instruction(&self) -> bool {
        self.role.is_instruction() && self.summary_marker().is_none()
    }

    /// Holds a thinking or redacted thinking block.
    pub fn has_thinking(&self) -> bool {
        self.parts.iter().any(Part::is_thinking)
    }

    /// Holds the provider's own compaction (block or item).
    pub fn is_compaction(&self) -> bool {
        self.parts
            .iter()
            .any(|p| matches!(p, Part::Opaque(o) if o.compaction))
    }
}

/// A conversation in the internal model; indices are the caller's indices.
#[derive(Debug, Clone, PartialEq)]
pub struct Thread {
    pub format: WireFormat,
    /// Anthropic's top-level `system`, or the Responses API's `instructions`.
    pub system: Option<Message>,
    pub messages: Vec<Message>,
    /// Tool schemas as sent: only their size matters to condense.
    pub tools: Vec<Value>,
}

impl Thread {
    /// The pinned prefix, never summarized: the leading instructions, and up
    /// to the last provider compaction (where the provider starts reading)
    /// with the instructions right after it (the settings the API emits there).
    pub fn pinned_len(&self) -> usize {
        let instructions = |from: usize| {
            let after = self.messages.get(from..).unwrap_or_default();
            from + after.iter().take_while(|m| m.is_instruction()).count()
        };
        let compacted = self
            .messages
            .iter()
            .rposition(Message::is_compaction)
            .map_or(0, |i| instructions(i + 1));
        instructions(0).max(compacted)
    }
}
