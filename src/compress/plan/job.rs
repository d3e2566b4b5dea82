//! Who writes the summary, and the summary job handed to the
//! [`SummaryService`](crate::summarize::SummaryService).

use super::super::continuity::Anchor;
use super::super::writer::{Shape, Upstream, decide};
use super::super::{Error, Hashes, Previous, Reason};
use super::cut::{Room, Tail};
use super::start::Prior;
use super::{Decision, Grouping, Planner};
use crate::policy::{self, OnUpstreamError, Trigger};
use crate::summarize::{
    Strategy, SummaryRequest, SummarySettings, Weighed, Writer, compacting_model, receipt,
};
use crate::thread::{Message, Thread};

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
        let mut warnings = std::mem::take(&mut self.warnings);
        let decision = self.decision(prior, tail, total_tokens, &mut warnings);
        self.warnings = warnings;
        let decision = decision?;
        if self.ask.instructions.is_some() && !decision.upstream() {
            self.warnings.push(
                "`summarizer.instructions` guide an LLM summary only; this summary was not written by one, so they were not used".into(),
            );
        }
        Ok(decision)
    }

    /// [`writer`](Self::writer), its warnings in `warnings`.
    fn decision(
        &self,
        prior: &Prior,
        tail: &Tail,
        total_tokens: u64,
        warnings: &mut Vec<String>,
    ) -> Result<Decision, Error> {
        // The conversation's provider compacts with its own model, whether
        // an upstream is configured or not.
        let model = match (self.ask.strategy, &self.ask.compact_target) {
            (Strategy::Provider, Some(t)) => Some(compacting_model(&t.model)),
            _ => self.setup.model.clone(),
        };
        let upstream = Upstream {
            model,
            allowed: self.ask.upstream_allowed,
        };
        let span = self.span_tokens(prior.start, tail.cut) as u64;
        let shape = Shape {
            format: self.t.format,
            lists: self.ask.grouping.lists(),
        };
        decide(
            self.ask.strategy,
            shape,
            upstream,
            (span, total_tokens),
            &self.p,
            warnings,
        )
    }

    /// What the message of the summary a compression due by `trigger`
    /// would write takes, in tokens, where that is known cheaply: the
    /// heuristic's, written here (fast and deterministic: the summary
    /// service would write the same bytes, so the job carries it, see
    /// [`Weighed`]). None for any other writer, or when there is nothing to
    /// write: the payback rule then counts the summary at its writer's bound.
    pub(super) fn written_tokens(
        &self,
        prior: &Prior,
        trigger: Trigger,
        total: u64,
    ) -> Option<(u64, Weighed)> {
        if !self.ask.grouping.cut_moves() {
            return None;
        }
        let reason = Reason::from(trigger);
        let room = self.room().ok()?;
        let mut tail = self.tail(prior, reason, &room, None);
        let decision = self.decision(prior, &tail, total, &mut Vec::new()).ok()?;
        if decision != Decision::Write(Writer::Heuristic) {
            return None;
        }
        self.shrink(&mut tail, &decision, &room);
        let previous = &prior.previous;
        let (span, _) = span(&self.t, prior.start, tail.cut, previous, &decision, false)?;
        let settings = SummarySettings {
            prior: previous.as_ref().map(|p| p.content.clone()),
            limit: room.summary_limit,
            writer: Writer::Heuristic,
            instructions: None,
            counter: self.c,
            fallback: false,
        };
        let weighed = receipt::heuristic_now(&SummaryRequest::new(span, settings));
        let covered = previous.as_ref().map_or(0, |p| p.messages_summarized)
            + span.iter().filter(|m| !m.is_instruction()).count();
        let tokens = policy::summary_message_tokens(&self.c, covered, &weighed.content);
        Some((tokens, weighed))
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
