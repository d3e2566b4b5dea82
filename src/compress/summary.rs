//! The summary object returned with a compressed thread, and what a
//! summarizer hands back to build it.

use serde::Serialize;

use crate::summarize::{Strategy, heuristic};
use crate::tokens::Counter;

/// Version of the summarizers' prompt and output, part of the content hash.
pub const PROMPT_VERSION: u32 = 1;

/// Upstream LLM usage behind a summary.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Upstream requests made (chunks and retries included).
    pub calls: u32,
    /// Wall time spent waiting on the upstream.
    pub upstream_ms: u64,
}

/// A summary as a summarizer (or the cache) hands it back.
#[derive(Debug, Clone, PartialEq)]
pub struct Written {
    pub content: String,
    /// What actually wrote it (`heuristic` after an upstream failure).
    pub strategy: Strategy,
    pub model: Option<String>,
    /// The content hash it is stored under.
    pub key: String,
    pub created_at: String,
    pub cached: bool,
    pub degraded: bool,
    pub usage: Option<Usage>,
    pub warnings: Vec<String>,
}

impl Written {
    pub fn new(content: String, strategy: Strategy, model: Option<String>, key: String) -> Self {
        Self {
            content,
            strategy,
            model,
            key,
            created_at: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
            cached: false,
            degraded: false,
            usage: None,
            warnings: Vec::new(),
        }
    }
}

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
    }
}

impl SummaryObject {
    /// Re-fits the content into `max_tokens` (when the budget is tighter than
    /// `max_summary_tokens`).
    pub fn shrink(&mut self, max_tokens: usize, c: &Counter<'_>) {
        if self.token_count <= max_tokens {
            return;
        }
        // The heuristic's sections shrink by their own rules; other text is cut at a line end.
        self.content = match self.strategy {
            Strategy::Heuristic => {
                heuristic(&[], Some(&self.content), max_tokens, |s| c.text(s).tokens)
            }
            _ => crate::summarize::llm::clip_tokens(&self.content, max_tokens, c),
        };
        self.token_count = c.text(&self.content).tokens;
    }
}
