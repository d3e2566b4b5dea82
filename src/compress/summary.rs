//! The summary object returned with a compressed thread.

use serde::Serialize;

use crate::policy::SummaryRole;
use crate::summarize::{self, Fidelity, Strategy, Written};
use crate::thread::{Message, Role, WireFormat, summary_text, text_message};
use crate::tokens::Counter;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SummaryObject {
    pub content: String,
    /// Messages this summary stands for, including those of summaries it extends.
    pub messages_summarized: usize,
    /// First and last index of the request's `messages` it covers.
    pub first_message_idx: usize,
    pub last_message_idx: usize,
    pub token_count: usize,
    pub strategy: Strategy,
    /// The LLM that wrote it (null for the heuristic).
    pub model: Option<String>,
    pub created_at: String,
    /// SHA-256 of what determines the summary (span, previous summary, settings).
    pub content_hash: String,
    pub cached: bool,
    /// Which of the span's anchors the summary holds (`summarize::receipt`).
    pub fidelity: Option<Fidelity>,
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
    pub(super) fn shrink(&mut self, max_tokens: usize, listed: bool, c: &Counter<'_>) {
        if self.token_count <= max_tokens {
            return;
        }
        self.content = match listed {
            true => summarize::refit_injection(&self.content, max_tokens, c),
            false => summarize::shrink(&self.content, self.strategy, max_tokens, c),
        };
        self.token_count = c.text(&self.content).tokens;
    }
}

/// The summary as a message of the thread: its header and the content.
pub(crate) fn summary_message(
    format: WireFormat,
    role: SummaryRole,
    covered: usize,
    content: &str,
) -> Message {
    // Anthropic takes system text only at the top level, and its first message must be a user turn.
    let role = match (format, role) {
        (WireFormat::OpenAi | WireFormat::Responses, SummaryRole::System) => Role::System,
        _ => Role::User,
    };
    text_message(format, role, summary_text(covered, content))
}
