//! The steps before the verdict: clear, find the summary this compression
//! extends; and the answer when nothing is due.

use super::super::{Compression, Error, Outcome, Previous, Setup, binding, clear, rules, split};
use super::{Ask, Grouping, Planned, Planner, Stage};
use crate::policy::{self, ClearSettings, PriorSummary};
use crate::summarize::Strategy;
use crate::thread::{FieldError, Thread};

/// The summary this compression extends, and what it does not cover.
pub(super) struct Prior {
    pub previous: Option<Previous>,
    /// First message not covered by `previous`, on a unit boundary.
    pub start: usize,
    /// The tokens `previous` takes in the thread (or would, as a message).
    pub summary_tokens: usize,
}

impl Planner {
    /// Clears first: the verdict is on the cleared thread. Never deferred in
    /// a tool loop: a result once cleared must stay cleared.
    pub(super) fn clear(req: Compression, mut setup: Setup) -> (Planner, Option<PriorSummary>) {
        let (mut t, p) = (req.thread, req.profile);
        let ask = Ask {
            strategy: req.strategy,
            instructions: req.instructions,
            force: req.force,
            grouping: req
                .keep_recent_iterations
                .map_or(Grouping::Messages, Grouping::Iterations),
            upstream_allowed: req.upstream_allowed,
            thinking_required: req.thinking_required,
            idle: req.idle,
            compact_target: req.compact_target,
        };
        let c = setup.counter;
        let warnings = std::mem::take(&mut setup.warnings);
        let mut count = c.thread(&t);
        let pinned = t.pinned_len();
        let tokens_before = count.total;
        let clearing = p
            .clear
            .clone()
            .or_else(|| (ask.strategy == Strategy::ClearToolResults).then(ClearSettings::default));
        let (edits, from) = match &clearing {
            Some(s) => clear::apply(&mut t, &mut count, s, ask.force, &c),
            None => (Vec::new(), None),
        };
        let cleared = clear::Cleared {
            tokens_before,
            edits,
            from,
        };
        let planner = Planner {
            t,
            count,
            p,
            c,
            setup,
            ask,
            pinned,
            cleared,
            warnings,
        };
        (planner, req.prior)
    }

    /// `clear_tool_results`: the cleared thread, warning of what it cannot do.
    pub(super) fn clear_only(mut self) -> Planned {
        if self.ask.instructions.is_some() {
            self.warnings.push("`summarizer.instructions` guide an LLM summary only; `clear_tool_results` writes none, so they were not used".into());
        }
        let (window, reserve) = (self.setup.context_window, self.p.response_reserve);
        let budget = window.saturating_sub(reserve);
        if self.count.total as u64 > budget {
            self.warnings.push(format!(
                "after clearing, the thread holds {} tokens, over its budget of {budget} (context_window {window} - response_reserve {reserve}): clearing alone cannot make it fit; use a summarizing strategy (`auto`)",
                self.count.total
            ));
        }
        self.unchanged(Stage::Quiet)
    }

    /// The answer when no summary is written: the cleared thread, rules applied.
    pub(super) fn unchanged(self, stage: Stage) -> Planned {
        let (outcome, cleared) = self.left_as_is();
        Planned::Done(Box::new(cleared.report(outcome)), stage)
    }

    /// The cleared thread, rules applied and thinking marked, and what clearing did.
    pub(in crate::compress) fn left_as_is(self) -> (Outcome, clear::Cleared) {
        let (t, count, window) = (self.t, &self.count, self.setup.context_window);
        let mut outcome = rules::unchanged(t, count, window, self.warnings, &self.p, &self.c);
        let thinking = (self.ask.thinking_required, !self.setup.history.known());
        binding::mark_in_place(&mut outcome, self.cleared.from, thinking, &self.c);
        (outcome, self.cleared)
    }

    /// The summary this compression extends, and the first message it does
    /// not cover, moved back to a unit boundary (no result loses its call).
    pub(super) fn previous(&mut self, prior: Option<PriorSummary>) -> Result<Prior, Error> {
        let (t, pinned) = (&self.t, self.pinned);
        let previous = previous_summary(t, prior, pinned, &mut self.warnings)?;
        let after = previous.as_ref().map_or(pinned, |s| s.last + 1);
        let start = split::unit_start(&split::units(&t.messages, pinned), after).max(pinned);
        let summary_tokens = match &previous {
            Some(prev) if prev.in_thread => self.count.messages[pinned],
            Some(prev) => {
                policy::summary_message_tokens(&self.c, prev.messages_summarized, &prev.content)
                    as usize
            }
            None => 0,
        };
        Ok(Prior {
            previous,
            start,
            summary_tokens,
        })
    }
}

/// The summary a compression extends: a summary message at the head of the
/// conversation wins over a `summary` object ([`policy::summary_in_thread`]).
fn previous_summary(
    t: &Thread,
    prior: Option<policy::PriorSummary>,
    pinned: usize,
    warnings: &mut Vec<String>,
) -> Result<Option<Previous>, Error> {
    if let Some(marker) = policy::summary_in_thread(t, pinned, prior.as_ref(), warnings) {
        return Ok(Some(Previous {
            last: pinned,
            content: marker.content,
            messages_summarized: marker.messages_summarized,
            in_thread: true,
        }));
    }
    let Some(prior) = prior else {
        return Ok(None);
    };
    let covered = prior.replaced(t);
    let content = prior.content.ok_or_else(|| {
        Error::Invalid(vec![FieldError::new(
            "/summary/content",
            "is required to extend a previous summary",
        )])
    })?;
    let last = prior.last_message_idx.max(pinned.saturating_sub(1));
    Ok(Some(Previous {
        last,
        content,
        messages_summarized: covered,
        in_thread: false,
    }))
}
