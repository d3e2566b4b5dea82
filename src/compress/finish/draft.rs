//! The draft: the thread assembled around the summary, then fitted into
//! the budget.

use super::super::binding::Provenance;
use super::super::fit::{Draft, Kept};
use super::super::plan::{Decision, Plan};
use super::super::rules::Rules;
use super::super::summary::summary_message;
use super::super::{Error, binding, split};
use super::Summary;
use crate::thread::{Cut, Message};

impl Plan {
    /// What the kept thinking is judged by (see `binding`), read before the
    /// messages move into the draft, and the active loop's final thinking.
    pub(super) fn thinking(&self) -> (Provenance, Option<usize>) {
        let t = &self.planner.t;
        let in_use_from = self.in_use().and_then(|u| u.from);
        let provenance = Provenance {
            in_use_from,
            first_final: in_use_from.and_then(|from| binding::final_thinking(t, from)),
            unknown_history: !self.planner.setup.history.known(),
            ..Provenance::default()
        };
        (provenance, binding::final_thinking(t, t.messages.len()))
    }

    /// Moves the messages into a draft: the pinned prefix, the summary, the
    /// span's instructions verbatim (in Anthropic always after a user turn:
    /// see `Draft::lead`), the tail (the profile's rules applied).
    pub(super) fn draft(&mut self, summary: &mut Summary) -> Draft {
        let (pinned, start, cut, c) = (self.planner.pinned, self.start, self.cut, self.planner.c);
        let count = &self.planner.count;
        let mut messages = std::mem::take(&mut self.planner.t.messages).into_iter();
        let head: Vec<Message> = messages.by_ref().take(cut).collect();
        let mut head = head.into_iter();
        let pinned_messages: Vec<Message> = head.by_ref().take(pinned).collect();
        let kept_summary = if summary.reused { head.next() } else { None };
        let first_span = pinned + usize::from(summary.reused);
        let instructions: Vec<Kept> = head
            .enumerate()
            .filter(|(_, m)| m.is_instruction())
            .map(|(i, message)| Kept {
                index: first_span + i,
                tokens: count.messages[first_span + i],
                message,
            })
            .collect();
        let tail = messages
            .enumerate()
            .map(|(i, message)| Kept {
                index: cut + i,
                message,
                tokens: count.messages[cut + i],
            })
            .collect();
        let mut draft = Draft::new(self.fixed, pinned_messages, tail);
        draft.instructions_follow_user = self.planner.t.format.instructions_follow_user();
        draft.keep_instructions(instructions);
        if let Some(rules) = Rules::of(&self.planner.p) {
            draft.apply_rules(&rules, self.planner.t.format, &c);
        }
        if let Some(m) = summary.message.take().or(kept_summary) {
            draft.set_summary(m, &c);
        }
        if matches!(self.decision, Decision::Truncate) {
            let kept = &draft.instructions;
            draft
                .dropped
                .extend((start..cut).filter(|i| !kept.iter().any(|k| k.index == *i)));
        }
        draft
    }

    /// Fits the draft: cut tool results, then any text, then shrink the summary,
    /// then drop the oldest tail units; never the pinned prefix.
    pub(super) fn fit(&mut self, draft: &mut Draft, summary: &mut Summary) -> Result<(), Error> {
        let (format, c, budget) = (self.planner.t.format, &self.planner.c, self.budget);
        if draft.total() <= budget
            || draft.cut_texts(c, format, Cut::ToolResults, budget)
            || draft.cut_texts(c, format, Cut::AnyText, budget)
        {
            return Ok(());
        }
        if let Some(obj) = summary.object.as_mut() {
            let written = obj.token_count;
            let room = budget.saturating_sub(draft.without_summary() + 24).max(16);
            obj.shrink(room, summary.listed, c);
            let role = self.planner.p.summary_role;
            let message = summary_message(format, role, obj.messages_summarized, &obj.content);
            draft.set_summary(message, c);
            if obj.token_count != written && obj.fidelity.is_some() {
                self.planner.warnings.push("the summary was shrunk to fit the budget after it was written; its `fidelity` receipt describes it as written".into());
            }
        }
        // Without a summary message the kept conversation must still open
        // with a user turn, so keep dropping until it does.
        let opens = |d: &Draft| {
            d.summary.is_some()
                || d.tail
                    .front()
                    .is_some_and(|k| split::opens_user_turn(&k.message))
        };
        for u in self.units.iter().filter(|u| u.start >= self.cut) {
            if (opens(draft) && draft.total() <= budget) || !draft.drop_oldest_unit(u.len()) {
                break;
            }
        }
        if opens(draft) && draft.total() <= budget {
            return Ok(());
        }
        Err(Error::DoesNotFit(format!(
            "even with the summary at its smallest, long texts cut and only the newest unit kept, the thread takes {} tokens; the budget is {budget}",
            draft.total()
        )))
    }
}
