//! The summary object returned with a compressed thread.

use serde::Serialize;

use crate::policy::SummaryRole;
use crate::summarize::{self, Fidelity, Strategy, Written};
use crate::thread::{Message, RawThread, Role, WireFormat, parse, summary_text, text_message};
use crate::tokens::Counter;

/// The summary of a compression; send it back as the request's `summary` to
/// extend it.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SummaryObject {
    /// The summary text (without the `[Context Summary - ...]` header of its
    /// message); for `provider`, the provider's compaction item as JSON,
    /// which the thread carries as that item.
    pub content: String,
    /// Messages it replaced, those of the summaries it extends included
    /// (instructions in its span, kept verbatim after it, are not counted);
    /// the `N` of its message's `[Context Summary - N previous messages]`.
    pub messages_summarized: usize,
    /// First index of the request's `messages` it covers (the first after
    /// the pinned prefix).
    pub first_message_idx: usize,
    /// Last index of the request's `messages` it covers.
    pub last_message_idx: usize,
    /// Tokens of `content`.
    pub token_count: usize,
    #[schema(schema_with = writer)]
    pub strategy: Strategy,
    /// The upstream model that wrote it; null for the heuristic.
    #[schema(required = true)]
    pub model: Option<String>,
    /// RFC 3339 UTC time, seconds precision.
    #[schema(format = DateTime, pattern = "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$")]
    pub created_at: String,
    /// SHA-256 (hex) of what determines the summary (the span, the previous
    /// summary, the strategy, the model and its settings).
    #[schema(pattern = "^[0-9a-f]{64}$")]
    pub content_hash: String,
    /// Whether it came from a cache (false unless a cache serves it).
    pub cached: bool,
    /// The fidelity receipt: which of the span's anchors (requests and
    /// standing instructions, errors, failing commands, paths, commands,
    /// URLs, identifiers, dates, numbers, names) the summary holds, as
    /// written. Missing anchors were appended under `### Also in the span`
    /// within `max_summary_tokens`; a cache hit returns the first write's
    /// receipt. `kept + added + missing == anchors`. Null for a `provider`
    /// item (encrypted: no anchor is checkable) and a summary cached
    /// without one.
    #[schema(required = true)]
    pub fidelity: Option<Fidelity>,
}

/// `strategy` as a summary has it: what wrote it, one of the strategies
/// that write summaries ([`Strategy::writes_summaries`]).
fn writer() -> utoipa::openapi::Object {
    let all = serde_json::to_value(<Strategy as utoipa::PartialSchema>::schema());
    let all = all.expect("a schema is JSON")["enum"].take();
    let writers = all.as_array().into_iter().flatten().filter(|v| {
        serde_json::from_value::<Strategy>((*v).clone()).is_ok_and(Strategy::writes_summaries)
    });
    utoipa::openapi::ObjectBuilder::new()
        .schema_type(utoipa::openapi::Type::String)
        .description(Some(
            "What actually wrote it (`heuristic` after an upstream failure; `auto` resolved).",
        ))
        .enum_values(Some(writers.cloned()))
        .build()
}

pub fn object(
    w: Written,
    messages_summarized: usize,
    first: usize,
    last: usize,
    c: &Counter<'_>,
) -> SummaryObject {
    SummaryObject {
        token_count: c.text(&w.content).tokens,
        content: w.content,
        messages_summarized,
        first_message_idx: first,
        last_message_idx: last,
        strategy: w.strategy,
        model: w.model,
        created_at: w.created_at,
        content_hash: w.key,
        cached: w.cached,
        fidelity: w.fidelity,
    }
}

impl SummaryObject {
    /// Re-fits the content into `max_tokens`; `listed`: a per-iteration
    /// injection, shrunk as it was bounded so it still reads back as a list.
    /// A provider's item is sealed: it stays whole.
    pub(super) fn shrink(&mut self, max_tokens: usize, listed: bool, c: &Counter<'_>) {
        if self.token_count <= max_tokens || self.strategy == Strategy::Provider {
            return;
        }
        self.content = match listed {
            true => summarize::refit_injection(&self.content, max_tokens, c),
            false => summarize::shrink(&self.content, self.strategy, max_tokens, c),
        };
        self.token_count = c.text(&self.content).tokens;
    }
}

/// The summary as a message of the thread: the provider's compaction item
/// as it wrote it (a `provider` summary in a Responses thread), else its
/// header and the content.
pub(crate) fn summary_message(
    format: WireFormat,
    role: SummaryRole,
    covered: usize,
    content: &str,
) -> Message {
    if let Some(item) = provider_item(format, content) {
        return item;
    }
    // Anthropic takes system text only at the top level, and its first message must be a user turn.
    let role = match (format, role) {
        (WireFormat::OpenAi | WireFormat::Responses, SummaryRole::System) => Role::System,
        _ => Role::User,
    };
    text_message(format, role, summary_text(covered, content))
}

/// `content` as the provider's compaction item, when it is one and the
/// thread speaks Responses (where the API reads it); parsed as the thread
/// parses its own items, so it is never summarized over.
fn provider_item(format: WireFormat, content: &str) -> Option<Message> {
    if format != WireFormat::Responses || !summarize::is_compaction_item(content) {
        return None;
    }
    let item: serde_json::Value = serde_json::from_str(content).ok()?;
    let t = parse(RawThread {
        format: Some(format),
        messages: std::slice::from_ref(&item),
        ..Default::default()
    });
    t.ok()?.messages.pop()
}
