//! What a thread would send, measured after its last summary: the numbers
//! the verdict decides on, and a summary's payback is estimated from.

use std::collections::BTreeSet;
use std::time::Duration;

use crate::thread::Thread;
use crate::tokens::ThreadCount;

/// What would actually be sent, measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Assessment {
    /// Conversation messages after the last summary (pinned prefix excluded).
    pub messages_since_summary: u64,
    /// Distinct `metadata.iteration` values among those messages.
    pub iterations_since_summary: u64,
    /// Pinned prefix + summary message + messages after the summary + tools + priming.
    pub total_tokens: u64,
    /// Every part of the count is the provider's own figure.
    pub exact: bool,
    /// What a new summary would take in: the messages after the last
    /// summary but the newest `min_recent_messages`.
    pub gain_tokens: u64,
    /// What can be compressed at all: the summary and every message after it.
    pub compressible_tokens: u64,
    /// The previous summary's message (part of `total_tokens` and
    /// `compressible_tokens`); 0 without one.
    pub summary_tokens: u64,
    /// Since the conversation's last forwarded request, where known (the
    /// proxy's ledger, or the caller's `idle_seconds`): past
    /// `provider_cache_ttl`, the cache is cold.
    pub idle: Option<Duration>,
}

/// Measures a thread after its last summary; the messages the summary covers
/// are not counted again (that would re-trigger summarization forever).
pub fn assess(
    thread: &Thread,
    count: &ThreadCount,
    last_summarized: Option<usize>,
    summary_tokens: u64,
    min_recent: usize,
) -> Assessment {
    let pinned = thread.pinned_len();
    let start = last_summarized.map_or(pinned, |i| (i + 1).max(pinned));
    // Instructions the summary's span held are sent beside it, verbatim.
    let instructions = (pinned..start).filter(|&i| thread.messages[i].is_instruction());
    let kept: usize = count.messages[..pinned]
        .iter()
        .chain(&count.messages[start..])
        .chain(instructions.map(|i| &count.messages[i]))
        .sum();
    let other = count.total - count.messages.iter().sum::<usize>();
    let iterations: BTreeSet<u64> = thread.messages[start..]
        .iter()
        .filter_map(|m| m.iteration)
        .collect();
    let since = &count.messages[start..];
    let since_tokens: usize = since.iter().sum();
    let recent: usize = since.iter().rev().take(min_recent).sum();
    Assessment {
        gain_tokens: (since_tokens - recent) as u64,
        compressible_tokens: since_tokens as u64 + summary_tokens,
        messages_since_summary: (thread.messages.len() - start) as u64,
        iterations_since_summary: iterations.len() as u64,
        total_tokens: (kept + other) as u64 + summary_tokens,
        exact: count.exact,
        summary_tokens,
        idle: None,
    }
}
