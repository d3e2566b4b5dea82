//! The draft: the thread assembled around the summary, then fitted into
//! the budget.

use super::super::fit::{Draft, Kept, Shrinkable, fit};
use super::super::plan::{Decision, Plan};
use super::super::rules::Rules;
use super::super::{Error, binding};
use super::Summary;
use crate::thread::Message;

/// The thinking blocks the output may keep (see `binding`), read from the
/// request thread before its messages move into the draft.
pub(super) struct Thinking {
    /// The final thinking of the active loop, if any.
    pub final_thinking: Option<usize>,
    /// Where the reused summary came into use, when recorded.
    pub in_use_from: Option<usize>,
    /// The final thinking of the request that first carried a reused
    /// summary: kept with `drop_block` then, so kept again, so the prefix
    /// stays byte-identical (the API drops it each time).
    pub first_final: Option<usize>,
}

impl Plan {
    /// What [`Thinking`] reads of the request thread.
    pub(super) fn thinking(&self) -> Thinking {
        let t = &self.thread;
        let in_use_from = self.in_use.as_ref().and_then(|u| u.from);
        Thinking {
            final_thinking: binding::final_thinking(t),
            in_use_from,
            first_final: in_use_from.and_then(|from| binding::final_thinking_in(t, from)),
        }
    }

    /// Moves the thread's messages into a draft: the pinned prefix, the
    /// summary message (the caller's own when reused), the span's
    /// mid-conversation instructions verbatim after it in their order (see
    /// `Message::is_instruction`), and the tail. The profile's rules apply
    /// before fitting; a truncation drops the rest of the span.
    pub(super) fn draft(&mut self, summary: &mut Summary) -> Draft {
        let (pinned, start, cut, c) = (self.pinned, self.start, self.cut, self.counter);
        let count = &self.count;
        let fixed = count.system.unwrap_or(0)
            + count.messages[..pinned].iter().sum::<usize>()
            + count.tools
            + crate::tokens::REPLY_PRIMING;
        let mut messages = std::mem::take(&mut self.thread.messages).into_iter();
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
        let mut draft = Draft::new(fixed, pinned_messages, tail);
        draft.keep_instructions(instructions);
        if let Some(rules) = Rules::of(&self.profile) {
            draft.apply_rules(&rules, self.thread.format, &c);
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

    /// Fits the draft into the budget (see [`fit`]), dropping whole tail
    /// units and shrinking the summary if it must; a summary shrunk after
    /// it was written is said so, its `fidelity` receipt being of the
    /// summary as written.
    pub(super) fn fit(&mut self, draft: &mut Draft, summary: &mut Summary) -> Result<(), Error> {
        let cut = self.cut;
        let tail_units: Vec<usize> = self
            .units
            .iter()
            .filter(|u| u.start >= cut)
            .map(|u| u.len())
            .collect();
        let written_tokens = summary.object.as_ref().map(|o| o.token_count);
        fit(
            draft,
            self.thread.format,
            &self.counter,
            self.budget,
            &tail_units,
            Shrinkable {
                object: &mut summary.object,
                role: self.profile.summary_role,
                grouped: summary.listed,
            },
        )?;
        if let Some(o) = summary
            .object
            .as_ref()
            .filter(|o| Some(o.token_count) != written_tokens)
            && o.fidelity.is_some()
        {
            self.warnings.push("the summary was shrunk to fit the budget after it was written; its `fidelity` receipt describes it as written".into());
        }
        Ok(())
    }
}
