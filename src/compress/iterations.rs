//! Per-iteration summaries in a compression (`group_by: "iteration"`): the
//! plan asks the summary service for them like for any summary (so the
//! strategy, the cache, the fallback and `on_upstream_error` apply), and the
//! list is read back from the written injection when finishing.

use super::split;
use super::summary::SummaryObject;
use crate::summarize::{
    SummaryRequest, SummarySettings, injection_refolded, iteration_summaries, refit_injection,
};
use crate::thread::Message;
use crate::tokens::Counter;

pub use crate::summarize::IterationSummary;

/// The request for the per-iteration summaries of `messages[start..cut]`.
pub(super) fn request(
    messages: &[Message],
    start: usize,
    cut: usize,
    settings: SummarySettings,
) -> SummaryRequest {
    let its = split::iterations(messages, start);
    SummaryRequest::by_iteration(&messages[start..cut], &its[..cut - start], settings)
}

/// The summaries an injection holds.
pub(super) fn summaries(injection: &str) -> Vec<IterationSummary> {
    iteration_summaries(injection)
}

/// Shrinks the injection to `max_tokens` as it was bounded when written
/// (oldest iterations left out first), so it still reads back as a list.
pub(super) fn shrink(obj: &mut SummaryObject, max_tokens: usize, c: &Counter<'_>) {
    if obj.token_count > max_tokens {
        obj.content = refit_injection(&obj.content, max_tokens, c);
        obj.token_count = c.text(&obj.content).tokens;
    }
}

/// The warning when `injection` does not extend `prior` byte for byte.
pub(super) fn refold_warning(prior: &str, injection: &str) -> Option<String> {
    injection_refolded(prior, injection).then(|| {
        "per-iteration summaries: the size bound forced a re-fold (older iterations folded into the rolling `Earlier iterations` entry, or the list shrunk to fit), so this context_injection does not start with the previous one and a provider's prompt cache misses from there".to_string()
    })
}
