//! Finishing a compression: assemble the thread around the written summary,
//! fit it into the budget, validate it.
//!
//! [`Plan::finish`] reads as its steps: the summary the output carries
//! (here), the draft around it and its fitting ([`draft`]), then the
//! thinking it may invalidate, what continuity records and the answer
//! ([`output`]). Each step hands the next a small struct of what it made.

mod draft;
mod output;

use super::binding;
use super::plan::{Decision, Plan};
use super::rules;
use super::summary::{self, SummaryObject, summary_message};
use super::{Error, Outcome, clear};
use crate::summarize::{Usage, Written};
use crate::thread::{Message, Thread};

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

/// The summary the output carries.
struct Summary {
    /// The summary written now, if any.
    object: Option<SummaryObject>,
    /// The message that stands for the span: a new one, or the previous
    /// summary when nothing new was summarized (None when it is the
    /// caller's own message, `reused`, or there is no summary).
    message: Option<Message>,
    /// The caller's own summary message (at `pinned`) stays as it was.
    reused: bool,
    /// Per iteration, the written summary is the injection (its list is
    /// read back from it once fitted).
    listed: bool,
    degraded: bool,
    usage: Option<Usage>,
}

impl Plan {
    /// Builds the compressed thread. `written` is the summary of the plan's
    /// job (None when it had none).
    pub(super) fn finish(mut self, written: Option<Written>) -> Result<Outcome, Error> {
        // The edits move to the answer; `from` stays for `assemble`.
        let mut cleared = clear::Cleared {
            edits: std::mem::take(&mut self.cleared.edits),
            ..self.cleared
        };
        self.assemble(written).map(|mut outcome| {
            cleared.edits.append(&mut outcome.applied_edits);
            cleared.report(outcome)
        })
    }

    fn assemble(mut self, written: Option<Written>) -> Result<Outcome, Error> {
        let mut summary = self.summary(written);
        // Nothing dropped, nothing new, and it fits: the caller's thread as it was.
        let kept_from = if summary.reused {
            self.pinned + 1
        } else {
            self.pinned
        };
        if summary.message.is_none() && self.cut == kept_from && self.count.total <= self.budget {
            return Ok(self.unchanged());
        }
        let thinking = self.thinking();
        let inserted = summary.message.is_some();
        let mut draft = self.draft(&mut summary);
        self.fit(&mut draft, &mut summary)?;
        let unbound = self.unbind(&mut draft, &summary, inserted, thinking);
        let carried = self.carried(&summary, inserted, unbound.unknown == 0);
        self.output(draft, summary, unbound, carried)
    }

    /// The summary object of what was written (a truncation keeps none),
    /// and the message that stands for the span: the new summary, or the
    /// previous one as it was when nothing new was summarized.
    fn summary(&mut self, written: Option<Written>) -> Summary {
        let (pinned, start, cut, c) = (self.pinned, self.start, self.cut, self.counter);
        let covered = self
            .previous
            .as_ref()
            .map_or(0, |s| s.messages_summarized)
            .saturating_add(cut - start);
        let written = match self.decision {
            Decision::Truncate => None,
            Decision::Write(_) => written,
        };
        let listed = self.grouping.lists() && written.is_some();
        let (mut degraded, mut usage) = (false, None);
        let object = written.map(|w| {
            degraded = w.degraded;
            usage = w.usage;
            self.warnings.extend(w.warnings.iter().cloned());
            summary::object(w, covered, pinned, cut.saturating_sub(1).max(pinned), &c)
        });
        let (format, role) = (self.thread.format, self.profile.summary_role);
        let previous = self.previous.as_ref();
        let reused = object.is_none() && previous.is_some_and(|p| p.in_thread);
        let shown = match (&object, previous) {
            (Some(o), _) => Some((o.messages_summarized, o.content.as_str())),
            (None, Some(p)) if !p.in_thread => Some((p.messages_summarized, p.content.as_str())),
            _ => None,
        };
        let message = shown.map(|(n, text)| summary_message(format, role, n, text));
        Summary {
            object,
            message,
            reused,
            listed,
            degraded,
            usage,
        }
    }

    /// The answer when the cut leaves nothing to replace: the caller's
    /// thread, with the profile's per-message rules applied.
    fn unchanged(mut self) -> Outcome {
        self.warnings.push(
            "nothing older than the recent messages to summarize; the thread is returned unchanged"
                .into(),
        );
        let mut outcome = rules::unchanged(
            self.thread,
            &self.count,
            self.context_window,
            self.warnings,
            &self.profile,
            &self.counter,
        );
        let required = self.thinking_required;
        binding::mark_in_place(&mut outcome, self.cleared.from, required, &self.counter);
        outcome
    }
}
