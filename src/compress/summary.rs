//! The summary object returned with a compressed thread.

use serde::Serialize;

use crate::policy::Profile;
use crate::summarize::{KeyInput, Strategy, content_hash, heuristic};
use crate::thread::Message;
use crate::tokens::Counter;

/// Version of the summarizers' output, part of the content hash.
pub const PROMPT_VERSION: u32 = 1;

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
}

pub struct ObjectInput<'a> {
    pub content: String,
    pub messages_summarized: usize,
    pub first_message_idx: usize,
    pub last_message_idx: usize,
    pub strategy: Strategy,
    pub span: &'a [Message],
    pub prior: Option<&'a str>,
    pub profile: &'a Profile,
    pub instructions: Option<&'a str>,
    pub counter: &'a Counter<'a>,
}

pub fn object(i: ObjectInput<'_>) -> SummaryObject {
    let content_hash = content_hash(&KeyInput {
        span: i.span,
        prior: i.prior,
        strategy: i.strategy.as_str(),
        model: None,
        prompt_version: PROMPT_VERSION,
        max_summary_tokens: i.profile.max_summary_tokens,
        instructions: i.instructions,
    });
    SummaryObject {
        token_count: i.counter.text(&i.content).tokens,
        content: i.content,
        messages_summarized: i.messages_summarized,
        first_message_idx: i.first_message_idx,
        last_message_idx: i.last_message_idx,
        strategy: i.strategy,
        model: None,
        created_at: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        content_hash,
        cached: false,
    }
}

impl SummaryObject {
    /// Re-fits the content into `max_tokens` (when the budget is tighter than
    /// `max_summary_tokens`).
    pub fn shrink(&mut self, max_tokens: usize, c: &Counter<'_>) {
        if self.token_count <= max_tokens {
            return;
        }
        self.content = heuristic(&[], Some(&self.content), max_tokens, |s| c.text(s).tokens);
        self.token_count = c.text(&self.content).tokens;
    }
}
