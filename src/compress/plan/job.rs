//! Who writes the summary, and the summary job handed to the
//! [`SummaryService`](crate::summarize::SummaryService).

use super::super::continuity::Anchor;
use super::super::writer::{Shape, Upstream, decide};
use super::super::{Error, Hashes, Previous, Reason};
use super::cut::{Room, Tail};
use super::start::Prior;
use super::{Decision, Grouping, Planner};
use crate::policy::OnUpstreamError;
use crate::summarize::{Strategy, SummaryRequest, SummarySettings, Writer};
use crate::thread::{Message, Thread};
use crate::upstream::Kind;

/// What replaces the span, and the summary to write for it, if any.
pub(super) struct Writing {
    pub decision: Decision,
    pub job: Option<SummaryRequest>,
}

impl Planner {
    /// Who writes the summary of `start..cut` (see [`decide`]); the
    /// instructions are unused, with a warning, when no LLM writes it.
    pub(super) fn writer(
        &mut self,
        prior: &Prior,
        tail: &Tail,
        total_tokens: u64,
    ) -> Result<Decision, Error> {
        let mut model = self.setup.model.clone();
        // The conversation's provider compacts with its own model.
        if let (Strategy::Provider, Some(t), Some(m)) =
            (self.ask.strategy, &self.ask.compact_target, &mut model)
        {
            m.name = t.model.clone();
            m.kind = Kind::OpenAi;
        }
        let upstream = Upstream {
            model,
            allowed: self.ask.upstream_allowed,
        };
        let span = self.span_tokens(prior.start, tail.cut) as u64;
        let shape = Shape {
            format: self.t.format,
            lists: self.ask.grouping.lists(),
        };
        let decision = decide(
            self.ask.strategy,
            shape,
            upstream,
            (span, total_tokens),
            &self.p,
            &mut self.warnings,
        )?;
        if self.ask.instructions.is_some() && !decision.upstream() {
            self.warnings.push(
                "`summarizer.instructions` guide an LLM summary only; this summary was not written by one, so they were not used".into(),
            );
        }
        Ok(decision)
    }

    /// The summary job for the span, if any, indexed under the conversation it
    /// stands for ([`Anchor`]); an injection only in continuity mode, where it
    /// is carried.
    pub(super) fn job(
        &mut self,
        prior: &Prior,
        tail: &Tail,
        decision: Decision,
        reason: Reason,
        room: &Room,
    ) -> Writing {
        let (t, start, cut) = (&self.t, prior.start, tail.cut);
        let previous = &prior.previous;
        let elsewhere = reason == Reason::Continued;
        let job = span(t, start, cut, previous, &decision, elsewhere).and_then(|(_, writer)| {
            let settings = SummarySettings {
                prior: previous.as_ref().map(|p| p.content.clone()),
                limit: room.summary_limit,
                writer,
                instructions: self.ask.instructions.take(),
                counter: self.c,
                fallback: self.p.on_upstream_error == OnUpstreamError::Fallback,
            };
            let mut job = self
                .ask
                .grouping
                .request(&t.messages, start, cut, settings)?;
            if matches!(job.settings.writer, Writer::Provider(_)) {
                job.target = self.ask.compact_target.clone();
            }
            if let Hashes::Made(anchor) = &self.setup.anchor {
                job.index = anchor.index(cut);
                job.prefixes = anchor.over(start, cut, job.span.len());
            }
            Some(job)
        });
        Writing { decision, job }
    }

    /// Indexes `job` (`start..cut`) under the conversation it stands for, if
    /// its hashes were left for when a summary is written ([`Hashes::Later`]):
    /// a cached summary costs no second pass over the history. CPU work.
    pub(in super::super) fn index(&self, job: &mut SummaryRequest, start: usize, cut: usize) {
        if !matches!(
            (&self.setup.anchor, self.ask.grouping),
            (Hashes::Later, Grouping::Messages)
        ) {
            return;
        }
        let instructions = job.settings.instructions.as_deref();
        let anchor = Anchor::of(
            &self.t,
            &self.p,
            self.ask.strategy,
            instructions,
            &self.setup,
        );
        job.index = anchor.index(cut);
        job.prefixes = anchor.over(start, cut, job.span.len());
    }
}

/// The span a summarizer must write and who writes it, if anyone (not on a
/// truncation, nor for a continued summary: `elsewhere`).
fn span<'t>(
    t: &'t Thread,
    start: usize,
    cut: usize,
    previous: &Option<Previous>,
    decision: &Decision,
    elsewhere: bool,
) -> Option<(&'t [Message], Writer)> {
    let span = &t.messages[start..cut];
    let extends = previous.as_ref().is_some_and(|p| !p.in_thread);
    // The summarizers never read instructions: after the caller's own
    // summary message, a span of them alone adds nothing to it.
    let reused = previous.as_ref().is_some_and(|p| p.in_thread);
    let nothing = span.iter().all(Message::is_instruction) && reused;
    match decision {
        Decision::Write(_) if elsewhere => None,
        Decision::Write(_) if (span.is_empty() && !extends) || nothing => None,
        Decision::Write(w) => Some((span, w.clone())),
        Decision::Truncate => None,
    }
}
