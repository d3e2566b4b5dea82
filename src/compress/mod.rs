//! The compression service: keep the pinned prefix and the recent messages
//! verbatim, replace the older span with a summary, fit the budget; one
//! entry point, [`Compressor::run`], for every caller.

mod binding;
mod check;
mod clear;
mod continuity;
mod finish;
mod fit;
mod iterations;
mod meter;
mod placeholder;
mod plan;
mod precompute;
mod rules;
mod service;
mod setup;
mod split;
mod summary;
mod writer;

use serde::Serialize;

use crate::policy::{PriorSummary, Profile, Trigger};
use crate::summarize::{Strategy, Usage};
use crate::thread::{FieldError, Thread};
use crate::tokens::{Encoding, Method};
use crate::upstream::{CompactTarget, UpstreamError};

pub use binding::carries_thinking;
pub use check::{GroupBy, keep_recent_iterations};
pub use clear::AppliedEdit;
pub use continuity::Carried;
pub use iterations::IterationSummary;
pub use meter::{Ask, Judged, Meter};
pub use precompute::{DEFAULT_CONCURRENCY as PRECOMPUTE_CONCURRENCY, Precompute, Precomputer};
pub use service::Compressor;
pub(crate) use setup::{Hashes, History, Mode, Ready, Setup};
pub use summary::SummaryObject;

/// Why a thread was compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    Messages,
    Tokens,
    ContextWindow,
    Iterations,
    /// The provider's cache was cold, and a summary due soon (`cold_cache`).
    ColdCache,
    Forced,
    /// Nothing was due, but per-message truncation rules cut messages.
    Rules,
    /// Nothing new is due; the previous summary stays (continuity).
    Continued,
    /// Old tool results (or thinking) were cleared, nothing else was due.
    ToolResultsCleared,
}

impl From<Trigger> for Reason {
    fn from(t: Trigger) -> Self {
        match t {
            Trigger::Messages => Reason::Messages,
            Trigger::Tokens => Reason::Tokens,
            Trigger::ContextWindow => Reason::ContextWindow,
            Trigger::Iterations => Reason::Iterations,
            Trigger::ColdCache => Reason::ColdCache,
        }
    }
}

impl Reason {
    /// As the API writes it (`cold_cache`), for the ledger.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Messages => "messages",
            Reason::Tokens => "tokens",
            Reason::ContextWindow => "context_window",
            Reason::Iterations => "iterations",
            Reason::ColdCache => "cold_cache",
            Reason::Forced => "forced",
            Reason::Rules => "rules",
            Reason::Continued => "continued",
            Reason::ToolResultsCleared => "tool_results_cleared",
        }
    }
}

/// What a caller asks for: a parsed thread and the settings, nothing of HTTP.
#[derive(Debug, Clone)]
pub struct Compression {
    pub thread: Thread,
    /// The profile with the request's overrides applied.
    pub profile: Profile,
    /// `min_recent_messages` is the request's own override: then it may not
    /// exceed the thread's length ([`Compression::check`]).
    pub min_recent_overridden: bool,
    /// The model whose tokenizer and window apply (None: the configured default).
    pub model: Option<String>,
    /// An encoding that overrides the model's.
    pub encoding: Option<Encoding>,
    /// How strings become tokens: the tokenizer, or a characters estimate.
    pub method: Method,
    /// The summary object of a previous compression (client keeps full history).
    pub prior: Option<PriorSummary>,
    pub strategy: Strategy,
    /// The upstream model to write the summary (None: the configured default).
    pub summarizer_model: Option<String>,
    pub instructions: Option<String>,
    /// Compress even when the verdict says nothing is due.
    pub force: bool,
    /// `group_by: "iteration"`: how many recent iterations stay verbatim.
    pub keep_recent_iterations: Option<usize>,
    /// The caller resends its whole history: replace the longest prefix a
    /// summary covers by it every turn, byte for byte (see [`continuity`]).
    pub continuity: bool,
    /// The caller may have the upstream LLM write (its key is marked `llm`,
    /// or access control is off); else `auto` writes a heuristic summary.
    pub upstream_allowed: bool,
    /// An active tool loop's final thinking block must stay (thinking is or may be on).
    pub thinking_required: bool,
    /// Write the due turn's summary ahead, in the background ([`precompute`]).
    pub precompute: bool,
    /// Since the conversation's last forwarded request, where known (the
    /// proxy's ledger): past `provider_cache_ttl`, its cache is cold.
    pub idle: Option<std::time::Duration>,
    /// Where `provider` compacts (the proxy: the conversation's own
    /// provider, model and credentials); None: the configured upstream.
    /// Beside the summary's settings, never in its key.
    pub compact_target: Option<CompactTarget>,
}

impl Compression {
    /// `thread` under `profile`, every other setting at its default.
    pub fn new(thread: Thread, profile: Profile) -> Self {
        Self {
            thread,
            profile,
            min_recent_overridden: false,
            model: None,
            encoding: None,
            method: Method::Bpe,
            prior: None,
            strategy: Strategy::default(),
            summarizer_model: None,
            instructions: None,
            force: false,
            keep_recent_iterations: None,
            continuity: false,
            upstream_allowed: true,
            thinking_required: true,
            precompute: false,
            idle: None,
            compact_target: None,
        }
    }
}

/// Why a compression could not be done; no variant carries upstream or
/// database text.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("invalid request")]
    Invalid(Vec<FieldError>),
    /// The pinned prefix, or the newest unit, alone is over the budget.
    #[error("{0}")]
    DoesNotFit(String),
    /// The strategy needs a part that is not configured (an upstream LLM).
    #[error("{0}")]
    StrategyUnavailable(String),
    /// The strategy needs the upstream LLM, which the caller's API key may not use.
    #[error("{0}")]
    Forbidden(String),
    /// `summarizer.model` names a model the operator does not allow.
    #[error("{0}")]
    ModelNotAllowed(String),
    /// The upstream LLM failed and the profile says `on_upstream_error: fail`.
    #[error("the upstream LLM failed ({})", .0.short())]
    Upstream(UpstreamError),
    #[error("the compressed thread failed validation: {0:?}")]
    Bug(Vec<FieldError>),
}

/// What compression produced.
#[derive(Debug)]
pub struct Outcome {
    pub compressed: bool,
    pub reason: Option<Reason>,
    /// The output thread (same format, system and tools as the input).
    pub thread: Thread,
    pub summary: Option<SummaryObject>,
    pub tokens_before: usize,
    pub tokens_after: usize,
    pub context_window: u64,
    pub messages_dropped: Vec<usize>,
    pub messages_truncated: Vec<usize>,
    /// Per-iteration summaries (`group_by: "iteration"`), when written.
    pub iterations: Option<Vec<IterationSummary>>,
    /// The summary is not what was asked for (the upstream failed; heuristic fallback).
    pub degraded: bool,
    pub usage: Option<Usage>,
    /// What clearing did (empty when it did nothing).
    pub applied_edits: Vec<AppliedEdit>,
    /// Kept thinking whose prefix may have changed: needs `drop_block` ([`binding`]).
    pub thinking_drop_block: bool,
    /// Continuity: the summary carried, recorded once forwarded.
    pub carried: Option<Carried>,
    /// What precompute did on this request (None when it did nothing).
    pub precompute: Option<Precompute>,
    pub warnings: Vec<String>,
}

/// What the warning says when a summary re-folded the one it extends
/// (`finish::output` writes it): the prompt's prefix changes from there.
const REFOLD: &str = "forced a re-fold";

impl Outcome {
    /// The warning that the new summary re-folded its previous one, for the
    /// reports that carry no `warnings` (the proxy's `x-condense-note`).
    pub fn refold_warning(&self) -> Option<&str> {
        self.warnings
            .iter()
            .map(String::as_str)
            .find(|w| w.contains(REFOLD))
    }
}

/// The summary a compression extends: from the request, or found in the thread.
#[derive(Debug, Clone)]
pub(crate) struct Previous {
    /// Last request index it covers.
    pub last: usize,
    pub content: String,
    pub messages_summarized: usize,
    /// It is this thread's summary message, right after the pinned prefix.
    pub in_thread: bool,
}
