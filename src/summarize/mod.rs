//! Summarizers: what replaces the older span of a thread.
//!
//! `heuristic` is deterministic extraction (no LLM, fast); `llm` and `hybrid`
//! need an upstream model; `truncate` writes no summary at all (the span is
//! dropped); `auto` picks `llm` when an upstream is configured and the span is
//! large enough to be worth it, else `heuristic`. The compression plan
//! decides which, once, and hands the [`SummaryService`] a [`SummaryRequest`].
//!
//! This module sits below `compress` and above `upstream` and `cache`: it
//! owns the summary types both sides share ([`Written`], [`Usage`],
//! [`Fidelity`]).
//!
//! Every summary, whoever wrote it, is checked against its span's anchors
//! and repaired before it is cached (see [`receipt`]).

pub mod anchors;
mod canonical;
mod encode;
mod extract;
mod heuristic;
mod hybrid;
mod iterations;
pub mod llm;
pub mod receipt;
mod request;
mod salience;
mod sections;
mod service;
mod written;

use serde::{Deserialize, Serialize};

pub use canonical::{KEY_VERSION, KeySettings, canonical, canonical_with_ends, hashes};
pub use heuristic::heuristic;
pub use hybrid::NARRATIVE;
pub use iterations::{
    IterationSummary, refit as refit_injection, refolded as injection_refolded,
    summaries as iteration_summaries,
};
pub use receipt::{ALSO, Fidelity, write_offline};
pub use request::{
    AHEAD, Index, SummaryRequest, SummarySettings, UpstreamModel, Writer, ahead, counting,
};
pub use sections::{Caps, Sections, clip};
pub use service::SummaryService;
pub use written::{PROMPT_VERSION, Usage, Written};

use crate::tokens::Counter;
use crate::tokens::cancel::{self, Cancel};

/// A summary's content re-fitted into `max_tokens` (when the budget is
/// tighter than the limit it was written for). The heuristic's sections
/// shrink by their own rules; other text is cut at a line end.
pub fn shrink(content: &str, strategy: Strategy, max_tokens: usize, c: &Counter<'_>) -> String {
    match strategy {
        Strategy::Heuristic => heuristic(&[], Some(content), max_tokens, |s| c.text(s).tokens),
        _ => llm::clip_tokens(content, max_tokens, c),
    }
}

/// Runs CPU-bound work (tokenizing, extracting, hashing) on the blocking
/// pool, so it cannot stall the async workers; it stops early when this
/// future is dropped (`tokens::cancel`). A panic is passed on.
pub(crate) async fn cpu<T, F>(work: F) -> T
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    let (_cancel, flag) = Cancel::new();
    // The request's place stays taken until the work has stopped.
    let place = cancel::held();
    let task = tokio::task::spawn_blocking(move || {
        let _place = place;
        cancel::scope(flag, work)
    });
    match task.await {
        Ok(v) => v,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => panic!("a blocking task was cancelled: {e}"),
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Strategy {
    #[default]
    Auto,
    Heuristic,
    Llm,
    Hybrid,
    Truncate,
    /// Clear old tool results only (the profile's `clear` settings, or
    /// their defaults): no summary, nothing dropped.
    #[serde(rename = "clear_tool_results")]
    ClearToolResults,
}

impl Strategy {
    pub fn as_str(self) -> &'static str {
        match self {
            Strategy::Auto => "auto",
            Strategy::Heuristic => "heuristic",
            Strategy::Llm => "llm",
            Strategy::Hybrid => "hybrid",
            Strategy::Truncate => "truncate",
            Strategy::ClearToolResults => "clear_tool_results",
        }
    }
}
