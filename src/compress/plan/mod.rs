//! Planning a compression: CPU work without I/O, apart from writing the
//! summary so the [`Compressor`](super::Compressor) can run it on the blocking
//! pool. Every decision is made here, once.

mod cut;
mod job;
mod start;
mod steps;
mod verdict;

use std::ops::Range;

use super::continuity::InUse;
use super::iterations::Grouping;
use super::{History, Outcome, Previous, Reason, Setup, clear};
use crate::cache::CachedSummary;
use crate::policy::Profile;
use crate::summarize::{Strategy, SummaryRequest};
use crate::thread::Thread;
use crate::tokens::{Counter, ThreadCount};
use crate::upstream::CompactTarget;

pub(super) use super::writer::Decision;
pub(super) use steps::plan;

/// A plan, or the answer when there is nothing to do.
pub(super) enum Planned {
    Done(Box<Outcome>, Stage),
    Pending(Box<Plan>),
}

impl Planned {
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

/// Where a thread stands on its way to its next summary, for
/// [`precompute`](super::precompute); `start`: the first message not covered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stage {
    /// Nothing to write ahead.
    Quiet,
    /// Past `precompute_at` (or due but deferred in a tool loop).
    Ahead { start: usize },
    /// Due; `held`: the thread fits, so it waits for the one written ahead.
    Due { start: usize, held: bool },
}

/// Everything decided before the summary is written, owned (it crosses an `.await`).
pub(super) struct Plan {
    /// The cleared thread, its count and the settings, as planning left them.
    pub planner: Planner,
    pub budget: usize,
    /// What the pinned prefix, the tool schemas and the reply priming take.
    pub fixed: usize,
    /// First message not covered by a previous summary.
    pub start: usize,
    /// First message of the verbatim tail.
    pub cut: usize,
    /// The units of `messages[start..]`.
    pub units: Vec<Range<usize>>,
    pub previous: Option<Previous>,
    pub reason: Reason,
    pub decision: Decision,
    /// The summary to write between planning and finishing, if any.
    pub job: Option<SummaryRequest>,
    pub stage: Stage,
    /// The swap rule: the summary written ahead, adopted.
    pub ready: Option<CachedSummary>,
}

impl Plan {
    /// Continuity: where the reused summary is in use (see [`binding`]).
    pub fn in_use(&self) -> Option<&InUse> {
        match &self.planner.setup.history {
            History::Carried(in_use) if self.reason == Reason::Continued => Some(in_use),
            _ => None,
        }
    }
}

/// What the request asks of planning besides its thread and profile.
pub(super) struct Ask {
    strategy: Strategy,
    /// `summarizer.instructions`, taken by the job that uses them.
    instructions: Option<String>,
    force: bool,
    pub grouping: Grouping,
    upstream_allowed: bool,
    /// An active loop's final thinking must stay (see [`binding`]).
    pub thinking_required: bool,
    /// Since the conversation's last forwarded request, where known.
    pub idle: Option<std::time::Duration>,
    /// Where `provider` compacts, if not the configured upstream.
    compact_target: Option<CompactTarget>,
}

/// The cleared thread and everything the steps read.
pub(super) struct Planner {
    /// The thread after clearing.
    pub t: Thread,
    /// The count of `t` (after clearing).
    pub count: ThreadCount,
    pub p: Profile,
    pub c: Counter<'static>,
    /// The service's setup; its warnings are moved into `warnings`.
    pub setup: Setup,
    pub ask: Ask,
    /// The pinned prefix's length, taken before clearing.
    pub pinned: usize,
    /// What clearing did before planning.
    pub cleared: clear::Cleared,
    pub warnings: Vec<String>,
}
