//! Where to cut: the room a summary and the tail share, the verbatim tail
//! (with the swap rule), the shrink loop, and the truncation rule.

use std::ops::Range;

use super::super::continuity::summary_limit;
use super::super::{Error, Reason, split};
use super::start::Prior;
use super::{Decision, Planner};

/// The room the summary and the verbatim tail share.
pub(super) struct Room {
    /// The context window minus the response reserve.
    pub budget: usize,
    /// What the pinned prefix, the tool schemas and the reply priming take.
    pub fixed: usize,
    /// The summary's size bound.
    pub summary_limit: usize,
}

/// Where the verbatim tail begins.
pub(super) struct Tail {
    /// The units of `messages[start..]`.
    pub units: Vec<Range<usize>>,
    /// First message of the verbatim tail.
    pub cut: usize,
    /// The cut is a summary written ahead's (the swap rule): it stays.
    pub swapped: bool,
}

/// A summary message's tokens beyond its content's bound.
const SUMMARY_OVERHEAD: usize = 16;

impl Planner {
    /// The room; an error when the pinned prefix alone is over the budget.
    pub(super) fn room(&self) -> Result<Room, Error> {
        let (p, count, window) = (&self.p, &self.count, self.setup.context_window);
        let budget = window.saturating_sub(p.response_reserve) as usize;
        let fixed = count.system.unwrap_or(0)
            + count.messages[..self.pinned].iter().sum::<usize>()
            + count.tools
            + crate::tokens::REPLY_PRIMING;
        if fixed > budget {
            return Err(Error::DoesNotFit(format!(
                "the pinned prefix (system prompt, leading instructions and tool schemas) alone takes {fixed} tokens; the budget is {budget} (context_window {window} - response_reserve {})",
                p.response_reserve
            )));
        }
        Ok(Room {
            budget,
            fixed,
            summary_limit: summary_limit(p, window),
        })
    }

    /// The tail the profile asks for (all after a continued summary), or the
    /// swap rule's cut at `swap` when that fits.
    pub(super) fn tail(
        &self,
        prior: &Prior,
        reason: Reason,
        room: &Room,
        swap: Option<usize>,
    ) -> Tail {
        let (t, start, n) = (&self.t, prior.start, self.t.messages.len());
        let units = split::units(&t.messages, start);
        let min_recent = self.p.min_recent_messages as usize;
        let mut cut = self
            .ask
            .grouping
            .tail_start(&t.messages, &units, start, min_recent);
        if reason == Reason::Continued {
            cut = start;
        }
        let swapped = swap.filter(|&at| {
            reason != Reason::Continued
                && self.ask.grouping.cut_moves()
                && at > start
                && at < n
                && units.iter().any(|u| u.start == at)
                && room.fixed
                    + self.kept_tokens(self.pinned, at)
                    + room.summary_limit
                    + SUMMARY_OVERHEAD
                    + self.span_tokens(at, n)
                    <= room.budget
        });
        if let Some(at) = swapped {
            cut = at;
        }
        Tail {
            units,
            cut,
            swapped: swapped.is_some(),
        }
    }

    /// Shrinks the tail by whole units while the summary's share would not
    /// fit, down to `min_recent_messages`. One pass over the units: linear.
    pub(super) fn shrink(&self, tail: &mut Tail, decision: &Decision, room: &Room) {
        let n = self.t.messages.len();
        let min_recent = self.p.min_recent_messages as usize;
        let reserve = match decision {
            Decision::Truncate => 0,
            Decision::Write(_) => room.summary_limit + SUMMARY_OVERHEAD,
        };
        let mut tokens = self.span_tokens(tail.cut, n);
        let mut kept = self.kept_tokens(self.pinned, tail.cut);
        let first = tail.units.partition_point(|u| u.start < tail.cut);
        for u in &tail.units[first..] {
            if room.fixed + kept + reserve + tokens <= room.budget
                || u.end >= n
                || n - u.end < min_recent
            {
                break;
            }
            tokens -= self.span_tokens(u.start, u.end);
            kept += self.kept_tokens(u.start, u.end);
            tail.cut = u.end;
        }
    }

    /// With no summary message, the cut moves back to a user turn's unit.
    pub(super) fn open_with_user(&self, tail: &mut Tail, start: usize) {
        let messages = &self.t.messages;
        tail.cut = tail
            .units
            .iter()
            .rev()
            .map(|u| u.start)
            .find(|&s| s <= tail.cut && split::opens_user_turn(&messages[s]))
            .unwrap_or(start);
    }

    /// The tokens of `messages[from..to]`.
    pub(super) fn span_tokens(&self, from: usize, to: usize) -> usize {
        self.count.messages[from..to].iter().sum()
    }

    /// Instructions in the span stay beside the summary, whatever the cut.
    fn kept_tokens(&self, from: usize, to: usize) -> usize {
        (from..to)
            .filter(|&i| self.t.messages[i].is_instruction())
            .map(|i| self.count.messages[i])
            .sum()
    }
}
