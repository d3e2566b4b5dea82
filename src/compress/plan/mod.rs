//! Planning a compression: the verdict, where to cut, who writes the summary.
//!
//! Planning is CPU work and needs no I/O; writing the summary may call an
//! upstream LLM. Keeping them apart lets the [`Compressor`](super::Compressor)
//! plan on the blocking pool, await the summary, and finish on the blocking
//! pool again. Every decision is made here, once: the tail, the strategy and
//! model (as a [`Writer`](crate::summarize::Writer)), the summary's size bound.
//!
//! [`plan`] reads as its steps, each in its own place: clear
//! ([`start`]), the previous summary ([`start`]), the verdict
//! ([`verdict`]), the room and the cut ([`cut`]), the writer and the
//! summary job ([`job`]). A [`Planner`] carries the cleared thread and the
//! request's settings from step to step; each step hands the next a small
//! struct of what it decided.

mod cut;
mod job;
mod start;
mod steps;
mod verdict;

use std::ops::Range;

use super::iterations::Grouping;
use super::{Outcome, Previous, Reason, Setup, clear};
use crate::cache::CachedSummary;
use crate::policy::Profile;
use crate::summarize::{Strategy, SummaryRequest};
use crate::thread::Thread;
use crate::tokens::{Counter, ThreadCount};

pub(super) use super::writer::Decision;
pub(super) use steps::plan;

/// A plan, or the answer when there is nothing to do.
pub(super) enum Planned {
    Done(Box<Outcome>, Stage),
    Pending(Box<Plan>),
}

impl Planned {
    /// The thread's tokens, as given.
    pub fn tokens(&self) -> usize {
        match self {
            Planned::Done(outcome, _) => outcome.tokens_before,
            Planned::Pending(plan) => plan.cleared.tokens_before,
        }
    }

    /// It takes a summary written ahead (the swap rule).
    pub fn adopts(&self) -> bool {
        matches!(self, Planned::Pending(plan) if plan.ready.is_some())
    }

    /// Where the thread stands on its way to the next summary.
    pub fn stage(&self) -> Stage {
        match self {
            Planned::Done(_, stage) => *stage,
            Planned::Pending(plan) => plan.stage,
        }
    }
}

/// Where a thread stands on its way to its next summary, for precompute
/// (see [`precompute`](super::precompute)). `start` is the first message
/// no summary covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stage {
    /// Nothing to write ahead.
    Quiet,
    /// Past `precompute_at` (or due but deferred in a tool loop): the
    /// summary the due turn will need may be written ahead.
    Ahead { start: usize },
    /// Due: a summary written ahead is swapped in if there is one.
    /// `held`: the thread fits, so without one it was not written now
    /// (the previous summary stays) and waits for the one written ahead.
    Due { start: usize, held: bool },
}

/// Everything decided before the summary is written. Owns its data so it
/// can cross an `.await`.
pub(super) struct Plan {
    pub thread: Thread,
    pub profile: Profile,
    pub counter: Counter<'static>,
    pub context_window: u64,
    pub budget: usize,
    pub count: ThreadCount,
    pub pinned: usize,
    /// First message not covered by a previous summary.
    pub start: usize,
    /// First message of the verbatim tail.
    pub cut: usize,
    /// The units of `messages[start..]`.
    pub units: Vec<Range<usize>>,
    pub previous: Option<Previous>,
    pub reason: Reason,
    pub decision: Decision,
    pub grouping: Grouping,
    /// The summary to write between planning and finishing, if any.
    pub job: Option<SummaryRequest>,
    pub warnings: Vec<String>,
    /// What clearing did before planning (`count` is of the cleared thread).
    pub cleared: clear::Cleared,
    /// An active loop's final thinking must stay (see [`binding`]).
    pub thinking_required: bool,
    /// Continuity: where the reused summary is in use (see [`binding`]).
    pub in_use: Option<super::continuity::InUse>,
    /// Continuity: the caller's messages after the pinned prefix (where a
    /// summary this request carries comes into use).
    pub continuity_len: Option<usize>,
    pub stage: Stage,
    /// The swap rule: the summary written ahead that is this plan's
    /// summary (adopted, not written).
    pub ready: Option<CachedSummary>,
}

/// What the request asks of planning besides its thread and profile.
struct Ask {
    strategy: Strategy,
    /// `summarizer.instructions`, taken by the job that uses them.
    instructions: Option<String>,
    force: bool,
    grouping: Grouping,
    upstream_allowed: bool,
    thinking_required: bool,
}

/// The cleared thread and everything the steps read, carried from one to
/// the next so that each step's signature names only what it decides on.
struct Planner {
    /// The thread after clearing.
    t: Thread,
    /// The count of `t` (after clearing).
    count: ThreadCount,
    p: Profile,
    c: Counter<'static>,
    /// The service's setup; its warnings are moved into `warnings`.
    setup: Setup,
    ask: Ask,
    /// The pinned prefix's length, taken before clearing.
    pinned: usize,
    cleared: clear::Cleared,
    warnings: Vec<String>,
}
