//! Finishing a compression: assemble the thread around the written summary,
//! fit it into the budget, validate it.

use super::binding::{self, Provenance};
use super::continuity::Carried;
use super::fit::{Draft, Kept, Shrinkable, fit};
use super::plan::{Decision, Plan};
use super::rules::{self, Rules};
use super::summary::{self, summary_message};
use super::{Error, Outcome, clear, iterations};
use crate::summarize::Written;
use crate::thread::{Message, Thread, validate};

impl Outcome {
    /// The answer when nothing is due: the caller's thread, value for value.
    pub(crate) fn unchanged(
        thread: Thread,
        tokens: usize,
        context_window: u64,
        warnings: Vec<String>,
    ) -> Outcome {
        Outcome {
            compressed: false,
            reason: None,
            thread,
            summary: None,
            tokens_before: tokens,
            tokens_after: tokens,
            context_window,
            messages_dropped: Vec::new(),
            messages_truncated: Vec::new(),
            iterations: None,
            degraded: false,
            usage: None,
            applied_edits: Vec::new(),
            thinking_drop_block: false,
            carried: None,
            precompute: None,
            warnings,
        }
    }
}

impl Plan {
    /// Builds the compressed thread. `written` is the summary of the plan's
    /// job (None when it had none).
    pub(super) fn finish(mut self, written: Option<Written>) -> Result<Outcome, Error> {
        let before = self.tokens_before;
        let mut edits = std::mem::take(&mut self.applied_edits);
        self.assemble(written).map(|mut outcome| {
            edits.append(&mut outcome.applied_edits);
            clear::report(outcome, before, edits)
        })
    }

    fn assemble(self, written: Option<Written>) -> Result<Outcome, Error> {
        let c = self.counter;
        let t = self.thread;
        let (pinned, start, cut) = (self.pinned, self.start, self.cut);
        let role = self.profile.summary_role;
        let mut warnings = self.warnings;
        let covered = self
            .previous
            .as_ref()
            .map_or(0, |s| s.messages_summarized)
            .saturating_add(cut - start);
        let written = match self.decision {
            Decision::Truncate => None,
            Decision::Write(_) => written,
        };
        // Per iteration, the written summary is the injection (its list is
        // read back from it once fitted).
        let listed = self.keep_recent_iterations.is_some() && written.is_some();
        let (mut degraded, mut usage) = (false, None);
        let mut object = written.map(|w| {
            degraded = w.degraded;
            usage = w.usage;
            warnings.extend(w.warnings.iter().cloned());
            summary::object(w, covered, pinned, cut.saturating_sub(1).max(pinned), &c)
        });
        // The summary message: a new one, or the previous one as it was when
        // nothing new was summarized (`Some(pinned)`: the caller's own message).
        let (summary_message, reused) = match (&object, &self.previous) {
            (Some(o), _) => (
                Some(summary_message(
                    t.format,
                    role,
                    o.messages_summarized,
                    &o.content,
                )),
                false,
            ),
            (None, Some(prev)) if prev.in_thread => (None, true),
            (None, Some(prev)) => (
                Some(summary_message(
                    t.format,
                    role,
                    prev.messages_summarized,
                    &prev.content,
                )),
                false,
            ),
            (None, None) => (None, false),
        };
        // Nothing dropped, nothing new, and it fits: the caller's thread as it was.
        let identity = summary_message.is_none() && cut == if reused { pinned + 1 } else { pinned };
        if identity && self.count.total <= self.budget {
            warnings.push("nothing older than the recent messages to summarize; the thread is returned unchanged".into());
            let mut outcome = rules::unchanged(
                t,
                &self.count,
                self.context_window,
                warnings,
                &self.profile,
                &c,
            );
            binding::mark_in_place(&mut outcome, self.cleared_from);
            return Ok(outcome);
        }

        let final_thinking = binding::final_thinking(&t);
        // The final thinking of the request that first carried a reused
        // summary was kept with `drop_block` then: kept so again, so the
        // prefix stays byte-identical (the API drops it each time).
        let in_use_from = self.in_use.as_ref().and_then(|u| u.from);
        let first_final = in_use_from.and_then(|from| binding::final_thinking_in(&t, from));
        let Thread {
            format,
            system,
            messages,
            tools,
        } = t;
        let fixed = self.count.system.unwrap_or(0)
            + self.count.messages[..pinned].iter().sum::<usize>()
            + self.count.tools
            + crate::tokens::REPLY_PRIMING;
        let mut messages = messages.into_iter();
        let head: Vec<Message> = messages.by_ref().take(cut).collect();
        let mut head = head.into_iter();
        let pinned_messages: Vec<Message> = head.by_ref().take(pinned).collect();
        let kept_summary = if reused { head.next() } else { None };
        // Mid-conversation instructions of the summarized span: verbatim,
        // after the summary, in their order (see `Message::is_instruction`).
        let first_span = pinned + usize::from(reused);
        let instructions: Vec<Kept> = head
            .enumerate()
            .filter(|(_, m)| m.is_instruction())
            .map(|(i, message)| Kept {
                index: first_span + i,
                tokens: self.count.messages[first_span + i],
                message,
            })
            .collect();
        let tail = messages
            .enumerate()
            .map(|(i, message)| Kept {
                index: cut + i,
                message,
                tokens: self.count.messages[cut + i],
            })
            .collect();
        let mut draft = Draft::new(fixed, pinned_messages, tail);
        draft.keep_instructions(instructions);
        if let Some(rules) = Rules::of(&self.profile) {
            draft.apply_rules(&rules, format, &c);
        }
        let inserted = summary_message.is_some();
        if let Some(m) = summary_message.or(kept_summary) {
            draft.set_summary(m, &c);
        }
        if matches!(self.decision, Decision::Truncate) {
            let kept = &draft.instructions;
            draft
                .dropped
                .extend((start..cut).filter(|i| !kept.iter().any(|k| k.index == *i)));
        }
        let tail_units: Vec<usize> = self
            .units
            .iter()
            .filter(|u| u.start >= cut)
            .map(|u| u.len())
            .collect();
        let written_tokens = object.as_ref().map(|o| o.token_count);
        fit(
            &mut draft,
            format,
            &c,
            self.budget,
            &tail_units,
            Shrinkable {
                object: &mut object,
                role,
                grouped: listed,
            },
        )?;
        if let Some(o) = object
            .as_ref()
            .filter(|o| Some(o.token_count) != written_tokens)
            && o.fidelity.is_some()
        {
            warnings.push("the summary was shrunk to fit the budget after it was written; its `fidelity` receipt describes it as written".into());
        }
        // Thinking after what changed (see `binding`): a summary written now
        // certainly invalidates it; anything else may.
        let provenance = Provenance {
            new_summary: object.is_some(),
            inserted,
            changed: draft
                .truncated
                .first()
                .copied()
                .into_iter()
                .chain(self.cleared_from)
                .min(),
            in_use_from,
            first_final,
        };
        let unbound = binding::unbind(
            &mut draft,
            format,
            |position, index| provenance.prefix(position, index),
            final_thinking,
            self.thinking_required,
            &c,
        );
        // Continuity: the summary this output carries, recorded by the
        // caller once forwarded; not while it keeps thinking of unknown
        // validity (later turns keep it so too, and the prefix holds).
        let trusted = unbound.unknown == 0;
        let carried = self
            .continuity_len
            .filter(|_| inserted && trusted)
            .and_then(|len| {
                let key = match &object {
                    Some(o) => o.content_hash.clone(),
                    None => self.in_use.as_ref()?.key.clone(),
                };
                Some(Carried {
                    key,
                    in_use_from: len,
                })
            });
        // Read back after fitting: a tighter budget may have left some out.
        let iterations = object
            .as_ref()
            .filter(|_| listed)
            .map(|o| iterations::summaries(&o.content));
        if let (Some(o), Some(prev)) = (object.as_ref().filter(|_| listed), &self.previous) {
            warnings.extend(iterations::refold_warning(&prev.content, &o.content));
        }

        let tokens_after = draft.total();
        let (messages, truncated, dropped) = draft.into_messages();
        if unbound.removed_turns > 0 {
            warnings.push(format!(
                "removed the thinking of {} kept assistant turn(s): a new summary precedes them, and Anthropic binds thinking to its prefix",
                unbound.removed_turns
            ));
        }
        let out = Thread {
            format,
            system,
            messages,
            tools,
        };
        validate(&out).map_err(Error::Bug)?;
        Ok(Outcome {
            compressed: true,
            reason: Some(self.reason),
            thread: out,
            summary: object,
            tokens_before: self.count.total,
            tokens_after,
            context_window: self.context_window,
            messages_dropped: dropped,
            messages_truncated: truncated.into_iter().collect(),
            // Grouped by iteration: the list, even when no iteration was old enough.
            iterations: self
                .keep_recent_iterations
                .map(|_| iterations.unwrap_or_default()),
            degraded,
            usage,
            applied_edits: unbound.edit().into_iter().collect(),
            thinking_drop_block: unbound.drop_block,
            carried,
            precompute: None,
            warnings,
        })
    }
}
