//! The last steps: the thinking a new prefix invalidates, what continuity
//! records, and the answer.

use super::super::binding::{self, Provenance, Unbound};
use super::super::continuity::Carried;
use super::super::fit::Draft;
use super::super::plan::Plan;
use super::super::{Error, Outcome, iterations};
use super::Summary;
use super::draft::Thinking;
use crate::thread::{Thread, validate};

impl Plan {
    /// Thinking after what changed (see `binding`): a summary written now
    /// certainly invalidates it; anything else may.
    pub(super) fn unbind(
        &self,
        draft: &mut Draft,
        summary: &Summary,
        inserted: bool,
        thinking: Thinking,
    ) -> Unbound {
        let provenance = Provenance {
            new_summary: summary.object.is_some(),
            inserted,
            changed: draft
                .truncated
                .first()
                .copied()
                .into_iter()
                .chain(self.cleared.from)
                .min(),
            in_use_from: thinking.in_use_from,
            first_final: thinking.first_final,
        };
        binding::unbind(
            draft,
            self.thread.format,
            |position, index| provenance.prefix(position, index),
            thinking.final_thinking,
            self.thinking_required,
            &self.counter,
        )
    }

    /// Continuity: the summary this output carries, recorded by the caller
    /// once forwarded; not while it keeps thinking of unknown validity
    /// (`trusted` false: later turns keep it so too, and the prefix holds).
    pub(super) fn carried(
        &self,
        summary: &Summary,
        inserted: bool,
        trusted: bool,
    ) -> Option<Carried> {
        self.continuity_len
            .filter(|_| inserted && trusted)
            .and_then(|len| {
                let key = match &summary.object {
                    Some(o) => o.content_hash.clone(),
                    None => self.in_use.as_ref()?.key.clone(),
                };
                Some(Carried {
                    key,
                    in_use_from: len,
                })
            })
    }

    /// The answer: the fitted draft as the output thread (validated, so a
    /// provider never sees one it would refuse), with what was done to it.
    pub(super) fn output(
        mut self,
        draft: Draft,
        summary: Summary,
        unbound: Unbound,
        carried: Option<Carried>,
    ) -> Result<Outcome, Error> {
        let Summary {
            object,
            listed,
            degraded,
            usage,
            ..
        } = summary;
        // Read back after fitting: a tighter budget may have left some out.
        let iterations = object
            .as_ref()
            .filter(|_| listed)
            .map(|o| iterations::summaries(&o.content));
        if let (Some(o), Some(prev)) = (object.as_ref().filter(|_| listed), &self.previous) {
            self.warnings
                .extend(iterations::refold_warning(&prev.content, &o.content));
        }
        let tokens_after = draft.total();
        let (messages, truncated, dropped) = draft.into_messages();
        if unbound.removed_turns > 0 {
            self.warnings.push(format!(
                "removed the thinking of {} kept assistant turn(s): a new summary precedes them, and Anthropic binds thinking to its prefix",
                unbound.removed_turns
            ));
        }
        let out = Thread {
            messages,
            ..self.thread
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
                .grouping
                .lists()
                .then(|| iterations.unwrap_or_default()),
            degraded,
            usage,
            applied_edits: unbound.edit().into_iter().collect(),
            thinking_drop_block: unbound.drop_block,
            carried,
            precompute: None,
            warnings: self.warnings,
        })
    }
}
