//! The steps of a plan in order ([`plan`]). Apart from the root, which
//! imports none of the steps.

use super::cut::{Room, Tail};
use super::job::Writing;
use super::start::Prior;
use super::{Decision, Plan, Planned, Planner, Stage, verdict};
use crate::cache::CachedSummary;
use crate::compress::{Compression, Error, Mode, Reason, Setup};
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
    let mut writing = planner.job(&prior, &tail, decision, reason, &room);
    // The summary the verdict weighed, written once: the service stores it
    // when it was written for this job (the same key).
    if let Some(job) = &mut writing.job {
        job.weighed = due.weighed;
    }
    let plan = planner.into_plan(prior, tail, room, reason, stage, writing);
    Ok(Planned::Pending(Box::new(plan)))
}

impl Planner {
    /// The tail (the profile's, or the swap rule's) shrunk while the summary
    /// would not fit beside it, and who writes the summary.
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
        // Swapped and per-iteration tails are final; a continued summary adds nothing.
        if self.ask.grouping.cut_moves() && reason != Reason::Continued && !tail.swapped {
            self.shrink(&mut tail, &decision, room);
        }
        if decision == Decision::Truncate && prior.previous.is_none() {
            self.open_with_user(&mut tail, prior.start);
        }
        Ok((tail, decision))
    }

    /// The swap rule: take [`Mode`]'s `ready` as the summary when this turn
    /// may cut there, it fits, and its key is the one this plan would write.
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
        // A cut not taken leaves no trace (its warnings come again).
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
            decision: writing.decision,
            job: writing.job,
            planner: self,
            budget: room.budget,
            fixed: room.fixed,
            start: prior.start,
            cut: tail.cut,
            units: tail.units,
            previous: prior.previous,
            reason,
            stage,
            ready: None,
        }
    }
}
