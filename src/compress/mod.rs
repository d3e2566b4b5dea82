//! The compression engine: keep the pinned prefix and the recent messages
//! verbatim, replace the older span with a summary, fit the budget, and
//! return a thread the provider accepts.

mod finish;
mod fit;
mod iterations;
mod plan;
mod split;
mod summary;

use serde::Serialize;

use crate::policy::{PriorSummary, Profile, Trigger};
use crate::summarize::Strategy;
use crate::thread::{FieldError, Thread};
use crate::tokens::Counter;

pub use iterations::IterationSummary;
pub use plan::{Plan, Planned, SummaryJob, plan};
pub use summary::{PROMPT_VERSION, SummaryObject, Usage, Written};

/// Why a thread was compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    Messages,
    Tokens,
    ContextWindow,
    Forced,
}

impl From<Trigger> for Reason {
    fn from(t: Trigger) -> Self {
        match t {
            Trigger::Messages => Reason::Messages,
            Trigger::Tokens => Reason::Tokens,
            Trigger::ContextWindow => Reason::ContextWindow,
        }
    }
}

/// What a caller asks for.
pub struct Request<'a> {
    pub thread: &'a Thread,
    pub counter: &'a Counter<'a>,
    pub profile: &'a Profile,
    pub context_window: u64,
    /// The summary object of a previous compression (client keeps full history).
    pub prior: Option<PriorSummary>,
    pub strategy: Strategy,
    pub force: bool,
    pub instructions: Option<&'a str>,
    /// `group_by: "iteration"`: how many recent iterations stay verbatim.
    pub keep_recent_iterations: Option<usize>,
    /// Whether an upstream LLM is configured (`auto` needs one to pick `llm`).
    pub upstream: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("invalid request")]
    Invalid(Vec<FieldError>),
    #[error("{0}")]
    DoesNotFit(String),
    #[error("{0}")]
    Unsupported(String),
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
    pub messages_dropped: Vec<usize>,
    pub messages_truncated: Vec<usize>,
    pub iteration_summaries: Vec<IterationSummary>,
    /// The summary is not what was asked for (the upstream failed; heuristic fallback).
    pub degraded: bool,
    pub usage: Option<Usage>,
    pub warnings: Vec<String>,
}

/// The summary a compression extends: from the request, or found in the thread.
#[derive(Debug, Clone)]
pub(crate) struct Previous {
    /// Last request index it covers.
    pub last: usize,
    pub content: String,
    pub messages_summarized: usize,
    /// It is a summary message of this thread (client style b), at the
    /// first index after the pinned prefix.
    pub in_thread: bool,
}

/// Compresses with the heuristic summarizer, synchronously: plan, write the
/// summary, finish. The service uses [`plan`] and [`Plan::finish`] directly so
/// that an LLM can write the summary in between.
pub fn compress(req: &Request<'_>) -> Result<Outcome, Error> {
    match plan(req)? {
        Planned::Done(outcome) => Ok(outcome),
        Planned::Pending(plan) => {
            let written = match plan.job() {
                Some(job) if job.strategy == Strategy::Heuristic => {
                    Some(job.heuristic(req.counter))
                }
                Some(job) => {
                    return Err(Error::Unsupported(format!(
                        "strategy `{}` needs the async summarizer",
                        job.strategy.as_str()
                    )));
                }
                None => None,
            };
            plan.finish(req.counter, written)
        }
    }
}
