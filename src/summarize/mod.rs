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
mod provider;
pub mod receipt;
mod refold;
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
pub use provider::is_item as is_compaction_item;
pub use receipt::ALSO;
pub use refold::refolded;
pub use request::{
    AHEAD, Form, Index, SummaryRequest, SummarySettings, UpstreamModel, Writer, ahead, counting,
};
pub use service::SummaryService;
pub use written::{Fidelity, PROMPT_VERSION, Usage, Written};

pub(crate) use crate::tokens::cancel::cpu;

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
    /// The provider's own compaction item (`POST {base}/responses/compact`),
    /// for Responses threads only: encrypted, it keeps the kept turns'
    /// reasoning valid.
    Provider,
}

impl Strategy {
    /// What a summary can say wrote it: `auto` resolves to one of these,
    /// `truncate` and `clear_tool_results` write none.
    pub fn writes_summaries(self) -> bool {
        match self {
            Strategy::Heuristic | Strategy::Llm | Strategy::Hybrid | Strategy::Provider => true,
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
            Strategy::Provider => "provider",
        }
    }
}
