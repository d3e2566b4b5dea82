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

pub use canonical::{KEY_VERSION, KeySettings, canonical, canonical_with_ends, hashes};
pub use heuristic::{heuristic, shrink};
pub use iterations::{
    IterationSummary, refit as refit_injection, summaries as iteration_summaries,
};
pub use provider::{is_item as is_compaction_item, model as compacting_model};
pub use receipt::ALSO;
pub use refold::refolded;
pub use request::{
    AHEAD, Form, Index, SummaryRequest, SummarySettings, UpstreamModel, Weighed, Writer, ahead,
    counting,
};
pub use service::SummaryService;
pub use written::{Fidelity, PROMPT_VERSION, Usage, Written};

/// Which writer a compression asks for; it lives with the profile, which
/// names one for the proxy (`strategy`).
pub use crate::policy::Strategy;
pub(crate) use crate::tokens::cancel::cpu;
