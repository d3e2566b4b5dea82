//! The last steps: the thinking a new prefix invalidates, what continuity
//! records, and the answer.

use super::super::binding::{self, Provenance, Unbound};
use super::super::continuity::Carried;
use super::super::fit::Draft;
use super::super::plan::Plan;
use super::super::{Error, Outcome, iterations};
use super::Summary;
use crate::summarize::refolded;
use crate::thread::{Thread, validate};

impl Plan {
    /// Thinking after what changed (see `binding`): a summary written now
    /// certainly invalidates it; anything else may.
    pub(super) fn unbind(
        &self,
        draft: &mut Draft,
        summary: &Summary,
        inserted: bool,
        (provenance, final_thinking): (Provenance, Option<usize>),
    ) -> Unbound {
        let cut = draft.truncated.first().copied();
        let compaction = draft
            .summary
            .as_ref()
            .is_some_and(|(m, _)| m.is_compaction());
        let provenance = Provenance {
            new_summary: summary.object.is_some() && !compaction,
            compaction,
            inserted,
            changed: cut.into_iter().chain(self.planner.cleared.from).min(),
            ..provenance
        };
        binding::unbind(
            draft,
            self.planner.t.format,
            |position, index| provenance.prefix(position, index),
            final_thinking,
            self.planner.ask.thinking_required,
            &self.planner.c,
        )
    }

    /// Continuity: the summary this output carries; none while it keeps
    /// thinking of unknown validity (`trusted` false).
    pub(super) fn carried(
        &self,
        summary: &Summary,
        inserted: bool,
        trusted: bool,
    ) -> Option<Carried> {
        self.planner
            .setup
            .anchor
            .made()
            .map(|a| a.len())
            .filter(|_| inserted && trusted)
            .and_then(|len| {
                let key = match &summary.object {
                    Some(o) => o.content_hash.clone(),
                    None => self.in_use()?.key.clone(),
                };
                Some(Carried {
                    key,
                    in_use_from: len,
                })
            })
    }

    /// The answer: the fitted draft, validated so no provider refuses it.
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
        if let (Some(o), Some(prev)) = (&object, &self.previous) {
            let refold = refold_warning(&prev.content, &o.content, listed);
            self.planner.warnings.extend(refold);
        }
        let tokens_after = draft.total();
        let (messages, truncated, dropped) = draft.into_messages();
        let format = self.planner.t.format;
        self.planner
            .warnings
            .extend(unbound.removed_warning(format));
        self.planner.warnings.extend(unbound.dropped_warning());
        let out = Thread {
            messages,
            ..self.planner.t
        };
        validate(&out).map_err(Error::Bug)?;
        Ok(Outcome {
            compressed: true,
            reason: Some(self.reason),
            thread: out,
            summary: object,
            tokens_before: self.planner.count.total,
            tokens_after,
            context_window: self.planner.setup.context_window,
            messages_dropped: dropped,
            messages_truncated: truncated.into_iter().collect(),
            // Grouped by iteration: the list, even when no iteration was old enough.
            iterations: (self.planner.ask.grouping.lists()).then(|| iterations.unwrap_or_default()),
            degraded,
            usage,
            applied_edits: unbound.edit().into_iter().collect(),
            thinking_drop_block: unbound.drop_block,
            carried,
            precompute: None,
            warnings: self.planner.warnings,
        })
    }
}

/// The warning when the summary, written to extend `prior`, does not start
/// with it byte for byte where its writer appends ([`refolded`]): the size
/// bound forced a re-fold. `listed`: the injection of a per-iteration list.
fn refold_warning(prior: &str, content: &str, listed: bool) -> Option<String> {
    let (what, folded) = match listed {
        true => (
            "per-iteration summaries",
            "older iterations folded into the rolling `Earlier iterations` entry, or the list shrunk to fit), so this context_injection",
        ),
        false => (
            "summary",
            "the previous summary's sections merged with the new span's and re-fitted), so this summary",
        ),
    };
    refolded(prior, content).then(|| {
        format!("{what}: the size bound forced a re-fold ({folded} does not start with the previous one and a provider's prompt cache misses from there")
    })
}
