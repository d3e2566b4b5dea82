//! The steps of a plan in order ([`plan`]), and the plan they hand to the
//! finish step. Apart from the root, so that the root (the planner's
//! state) imports none of the steps that read it.

use super::cut::{Room, Tail};
use super::job::Writing;
use super::start::Prior;
use super::{Decision, Plan, Planned, Planner, Stage, verdict};
use crate::cache::CachedSummary;
use crate::compress::{Compression, Error, History, Mode, Reason, Setup};
use crate::summarize::{Strategy, ahead};

pub(in crate::compress) fn plan(req: Compression, setup: Setup) -> Result<Planned, Error> {
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
        if self.ask.grouping.cut_moves() && reason != Reason::Continued && !tail.swapped {
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
        // A cut not taken leaves no trace: its writer's warnings go, and the
        // cut made without it says them again.
        let (warned, instructions) = (self.warnings.len(), self.ask.instructions.clone());
        let (tail, decision) = self.cut(prior, reason, room, total, Some(ready.cut))?;
        let writing = tail
            .swapped
            .then(|| self.job(prior, &tail, decision, reason, room));
        let key = writing
            .as_ref()
            .and_then(|w| w.job.as_ref())
            .map(|j| ahead(j.key()));
        match writing {
            Some(writing) if key.as_deref() == Some(ready.entry.key.as_str()) => {
                Ok(Some((tail, writing, ready.entry)))
            }
            _ => {
                self.warnings.truncate(warned);
                self.ask.instructions = instructions;
                Ok(None)
            }
        }
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
            grouping: self.ask.grouping,
            job: writing.job,
            warnings: self.warnings,
            cleared: self.cleared,
            thinking_required: self.ask.thinking_required,
            in_use: match self.setup.history {
                History::Carried(in_use) if reason == Reason::Continued => Some(in_use),
                _ => None,
            },
            continuity_len: self.setup.anchor.made().map(|a| a.len()),
            stage,
            ready: None,
        }
    }
}
