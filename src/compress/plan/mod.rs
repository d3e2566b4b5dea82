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
mod verdict;

use std::ops::Range;

use super::{Compression, Error, History, Mode, Outcome, Previous, Reason, Setup, clear};
use crate::cache::CachedSummary;
use crate::policy::Profile;
use crate::summarize::{Strategy, SummaryRequest, ahead};
use crate::thread::Thread;
use crate::tokens::{Counter, ThreadCount};

pub(super) use super::writer::Decision;
use cut::{Room, Tail};
use job::Writing;
use start::Prior;

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
    pub keep_recent_iterations: Option<usize>,
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
    keep_recent_iterations: Option<usize>,
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

pub(super) fn plan(req: Compression, setup: Setup) -> Result<Planned, Error> {
    let (mut planner, prior) = Planner::clear(req, setup);
    if planner.ask.strategy == Strategy::ClearToolResults {
        return Ok(planner.clear_only());
    }
    let prior = planner.previous(prior)?;
    let due = planner.verdict(&prior);
    let Some(mut reason) = due.reason else {
        return Ok(planner.unchanged(due.stage));
    };
    let room = planner.room()?;
    let total = due.total_tokens;
    let mut stage = due.stage;
    if let Some((tail, writing, ready)) = planner.swap(&prior, reason, &room, total, stage)? {
        let mut plan = planner.into_plan(prior, tail, room, reason, stage, writing);
        plan.ready = Some(ready);
        return Ok(Planned::Pending(Box::new(plan)));
    }
    let (mut tail, decision) = planner.cut(&prior, reason, &room, total, None)?;
    // Precompute: a summary the upstream would write waits for the one
    // written ahead while the thread fits (none waits on the upstream).
    if let Some(held) = due.hold.filter(|_| decision.upstream()) {
        planner.warnings.push(verdict::PENDING.into());
        stage = Stage::Due {
            start: prior.start,
            held: true,
        };
        let Some(kept) = held else {
            return Ok(planner.unchanged(stage));
        };
        reason = kept;
        tail = planner.tail(&prior, reason, &room, None);
    }
    let writing = planner.job(&prior, &tail, decision, reason, &room);
    let plan = planner.into_plan(prior, tail, room, reason, stage, writing);
    Ok(Planned::Pending(Box::new(plan)))
}

impl Planner {
    /// The tail and who writes the summary: the tail the profile asks for
    /// (or the swap rule's, `swap`), shrunk while the summary would not fit
    /// beside it; with no summary message, moved back to open with a user
    /// turn.
    fn cut(
        &mut self,
        prior: &Prior,
        reason: Reason,
        room: &Room,
        total: u64,
        swap: Option<usize>,
    ) -> Result<(Tail, Decision), Error> {
        let mut tail = self.tail(prior, reason, room, swap);
        let decision = self.writer(prior, &tail, total)?;
        // The swap rule and per-iteration tails are final; a continued
        // summary has nothing new to make room for.
        if self.ask.keep_recent_iterations.is_none() && reason != Reason::Continued && !tail.swapped
        {
            self.shrink(&mut tail, &decision, room);
        }
        if decision == Decision::Truncate && prior.previous.is_none() {
            self.open_with_user(&mut tail, prior.start);
        }
        Ok((tail, decision))
    }

    /// The swap rule: the plan that takes the summary written ahead
    /// ([`Mode`]'s `ready`) as its summary, when it covers a prefix this
    /// turn may cut at, the result fits, and it is exactly the summary this
    /// plan would write there (its key: the same previous summary, span and
    /// settings). None: the plan is made as without it.
    fn swap(
        &mut self,
        prior: &Prior,
        reason: Reason,
        room: &Room,
        total: u64,
        stage: Stage,
    ) -> Result<Option<(Tail, Writing, CachedSummary)>, Error> {
        let Some(ready) = self.setup.mode.ready().cloned() else {
            return Ok(None);
        };
        let due =
            matches!(self.setup.mode, Mode::Ahead { .. }) || matches!(stage, Stage::Due { .. });
        if !due || reason == Reason::Continued {
            return Ok(None);
        }
        let (tail, decision) = self.cut(prior, reason, room, total, Some(ready.cut))?;
        if !tail.swapped {
            return Ok(None);
        }
        let instructions = self.ask.instructions.clone();
        let writing = self.job(prior, &tail, decision, reason, room);
        let key = writing.job.as_ref().map(|j| ahead(j.key()));
        if key.as_deref() != Some(ready.entry.key.as_str()) {
            self.ask.instructions = instructions;
            return Ok(None);
        }
        Ok(Some((tail, writing, ready.entry)))
    }

    /// The plan the finish step needs, owning its data.
    fn into_plan(
        self,
        prior: Prior,
        tail: Tail,
        room: Room,
        reason: Reason,
        stage: Stage,
        writing: Writing,
    ) -> Plan {
        Plan {
            thread: self.t,
            profile: self.p,
            counter: self.c,
            context_window: self.setup.context_window,
            budget: room.budget,
            count: self.count,
            pinned: self.pinned,
            start: prior.start,
            cut: tail.cut,
            units: tail.units,
            previous: prior.previous,
            reason,
            decision: writing.decision,
            keep_recent_iterations: self.ask.keep_recent_iterations,
            job: writing.job,
            warnings: self.warnings,
            cleared: self.cleared,
            thinking_required: self.ask.thinking_required,
            in_use: match self.setup.history {
                History::Carried(in_use) if reason == Reason::Continued => Some(in_use),
                _ => None,
            },
            continuity_len: self.setup.anchor.as_ref().map(|a| a.len()),
            stage,
            ready: None,
        }
    }
}
