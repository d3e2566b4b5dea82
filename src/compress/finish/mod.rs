//! Finishing a compression ([`Plan::finish`]) around the summary written.

mod draft;
mod output;

use super::plan::{Decision, Plan};
use super::summary::{self, SummaryObject, summary_message};
use super::{Error, Outcome, clear};
use crate::summarize::{Strategy, Usage, Written};
use crate::thread::Message;

/// What the receipt of a `provider` summary says.
const SEALED: &str = "the summary is the provider's encrypted compaction item: condense cannot check which of the span's anchors it holds (`fidelity` is null)";

/// The summary the output carries.
struct Summary {
    /// The summary written now, if any.
    object: Option<SummaryObject>,
    /// The message that stands for the span: a new one, or the previous
    /// summary (None when `reused` or there is none).
    message: Option<Message>,
    /// The caller's own summary message (at `pinned`) stays as it was.
    reused: bool,
    /// Per iteration: the written summary is the injection, read back as a list.
    listed: bool,
    degraded: bool,
    usage: Option<Usage>,
}

impl Plan {
    /// Builds the compressed thread around the job's summary, if any.
    pub(super) fn finish(mut self, written: Option<Written>) -> Result<Outcome, Error> {
        // The edits move to the answer; `from` stays for `assemble`.
        let cleared = clear::Cleared {
            edits: std::mem::take(&mut self.planner.cleared.edits),
            ..self.planner.cleared
        };
        self.assemble(written)
            .map(|outcome| cleared.report(outcome))
    }

    fn assemble(mut self, written: Option<Written>) -> Result<Outcome, Error> {
        let mut summary = self.summary(written);
        // Nothing dropped (instructions stay where they are), nothing new,
        // and it fits: the caller's thread as it was.
        let kept_from = self.planner.pinned + usize::from(summary.reused);
        let between = self.planner.t.messages.get(kept_from..self.cut);
        let only_instructions =
            summary.reused && between.is_some_and(|span| span.iter().all(Message::is_instruction));
        if summary.message.is_none()
            && (self.cut == kept_from || only_instructions)
            && self.planner.count.total <= self.budget
        {
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
    /// and the message that stands for the span.
    fn summary(&mut self, written: Option<Written>) -> Summary {
        let (pinned, start, cut, c) = (self.planner.pinned, self.start, self.cut, self.planner.c);
        // The messages it replaces: instructions in the span come back verbatim after it.
        let replaced = replaced(&self.planner.t.messages[start..cut]);
        let covered = self
            .previous
            .as_ref()
            .map_or(0, |s| s.messages_summarized)
            .saturating_add(replaced);
        let written = match self.decision {
            Decision::Truncate => None,
            Decision::Write(_) => written,
        };
        let listed = self.planner.ask.grouping.lists() && written.is_some();
        let (mut degraded, mut usage) = (false, None);
        let object = written.map(|w| {
            degraded = w.degraded;
            usage = w.usage;
            self.planner.warnings.extend(w.warnings.iter().cloned());
            if w.strategy == Strategy::Provider {
                self.planner.warnings.push(SEALED.into());
            }
            summary::object(w, covered, pinned, cut.saturating_sub(1).max(pinned), &c)
        });
        let (format, role) = (self.planner.t.format, self.planner.p.summary_role);
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

    /// The answer when the cut leaves nothing to replace.
    fn unchanged(mut self) -> Outcome {
        self.planner.warnings.push(
            "nothing older than the recent messages to summarize; the thread is returned unchanged"
                .into(),
        );
        self.planner.left_as_is().0
    }
}

/// How many of `span`'s messages a summary of it replaces: all but its
/// instructions, which come back verbatim after the summary.
fn replaced(span: &[Message]) -> usize {
    span.iter().filter(|m| !m.is_instruction()).count()
}
