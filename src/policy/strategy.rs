//! Which summarizer a compression asks for: a request's
//! `summarizer.strategy`, or the profile's `strategy` (the proxy's only
//! way to choose one). It lives here, below `summarize`, as both the
//! profile and the writers name it.

use serde::{Deserialize, Serialize};

/// Who writes the summary (`auto` decides per span).
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
    /// The default, which a profile does not write out (so the profiles
    /// and continuity keys of before the field stay as they were).
    pub fn is_auto(&self) -> bool {
        *self == Strategy::Auto
    }

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
