//! Summarizers: what replaces the older span of a thread. The plan decides
//! the writer once and hands the [`SummaryService`] a [`SummaryRequest`];
//! every summary is checked against its span's anchors and repaired before
//! it is cached. Below `compress`, above `upstream` and `cache`, it owns the
//! summary types both sides share.

pub mod anchors;
mod canonical;
mod extract;
mod fit;
mod heuristic;
mod hybrid;
mod iterations;
pub mod llm;
mod pattern;
pub mod receipt;
mod request;
mod salience;
mod sections;
mod service;
mod written;

use serde::{Deserialize, Serialize};

pub use canonical::{KEY_VERSION, KeySettings, canonical, canonical_with_ends, hashes};
pub use heuristic::{heuristic, shrink};
pub use iterations::{
    IterationSummary, refit as refit_injection, summaries as iteration_summaries,
};
pub use receipt::ALSO;
pub use request::{
    AHEAD, Form, Index, SummaryRequest, SummarySettings, UpstreamModel, Writer, ahead, counting,
};
pub use service::SummaryService;
pub use written::{Fidelity, PROMPT_VERSION, Usage, Written};

pub(crate) use crate::tokens::cancel::cpu;

/// Whether `content`, written to extend `prior`, re-folded it: where its
/// writer appends (an injection's list, the heuristic's sections), it does
/// not start with `prior` byte for byte, so a provider's prompt cache
/// misses from there. An LLM's or a hybrid's summary is rewritten each time.
pub fn refolded(prior: &str, content: &str) -> bool {
    let appends = |t: &str| heuristic::appends(t) && !t.contains(hybrid::NARRATIVE);
    let sections = appends(prior) && appends(content);
    (iterations::lists(prior) || sections) && !content.starts_with(prior.trim_end())
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
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
    /// What a summary can say wrote it: `auto` resolves to one of these,
    /// `truncate` and `clear_tool_results` write none.
    pub fn writes_summaries(self) -> bool {
        match self {
            Strategy::Heuristic | Strategy::Llm | Strategy::Hybrid => true,
            Strategy::Auto | Strategy::Truncate | Strategy::ClearToolResults => false,
        }
    }

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
