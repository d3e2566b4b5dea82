//! Summarizers: what replaces the older span of a thread.
//!
//! `heuristic` is deterministic extraction (no LLM, fast); `llm` and `hybrid`
//! need an upstream model; `truncate` writes no summary at all (the span is
//! dropped); `auto` picks `llm` when an upstream is configured and the span is
//! large enough to be worth it, else `heuristic`.

mod extract;
mod heuristic;
mod key;
pub mod llm;
mod sections;
mod service;

use serde::{Deserialize, Serialize};

pub use heuristic::heuristic;
pub use key::{KEY_VERSION, KeyInput, content_hash, prefix_hashes};
pub use sections::{Caps, Sections, clip};
pub use service::{NARRATIVE, OnUpstreamError, SummaryService};

/// The heuristic's sections of a span, uncapped (for per-iteration summaries).
pub fn extract_sections(span: &[crate::thread::Message]) -> Sections {
    extract::extract(span, Caps::default().text)
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
}

impl Strategy {
    pub fn as_str(self) -> &'static str {
        match self {
            Strategy::Auto => "auto",
            Strategy::Heuristic => "heuristic",
            Strategy::Llm => "llm",
            Strategy::Hybrid => "hybrid",
            Strategy::Truncate => "truncate",
        }
    }
}
