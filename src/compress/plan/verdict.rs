//! The verdict step: is a summary due, may it be written now, and where
//! the thread stands for precompute.

use super::super::writer::{Upstream, decide};
use super::super::{Reason, binding, split};
use super::{Decision, Planner, Prior, Stage};
use crate::policy::{self, Profile, Trigger};
use crate::summarize::Writer;

/// What the verdict decided.
pub(super) struct Due {
    /// Why a summary is written now; None: the thread stays as it is.
    pub reason: Option<Reason>,
    pub stage: Stage,
    /// The thread's tokens with the previous summary's (for the writer).
    pub total_tokens: u64,
}

impl Planner {
    /// The policy's verdict on the cleared thread, counting a previous
    /// summary that stands outside it, then whether a due summary waits:
    /// in an active loop while the thread fits (see `binding`), or for the
    /// one written ahead (precompute). A summary outside the thread (the
    /// cache's, or the request's `summary` object) stays in place when
    /// nothing new is due.
    pub(super) fn verdict(&mut self, prior: &Prior) -> Due {
        let (t, count, p) = (&self.t, &self.count, &self.p);
        let recent = p.min_recent_messages as usize;
        let last = prior.previous.as_ref().map(|s| s.last);
        let mut assessed = policy::assess(t, count, last, 0, recent);
        assessed.total_tokens += prior.summary_tokens as u64;
        assessed.compressible_tokens += prior.summary_tokens as u64;
        let verdict = policy::decide(p, assessed, self.setup.context_window);
        self.warnings.extend(verdict.held_back.clone());
        let outside = prior.previous.as_ref().is_some_and(|p| !p.in_thread);
        let continued = self.setup.in_use.is_some() && outside;
        // Waiting keeps the previous summary as it was; only when what was
        // forwarded before is known (a continuity cache that answered).
        let fits = verdict.trigger != Some(Trigger::ContextWindow);
        let due = verdict.trigger.is_some() && self.setup.history_known;
        let force = self.ask.force;
        let bound = due && binding::defer(t, self.ask.thinking_required, fits, force);
        let held = due && !bound && self.setup.hold && fits && !force && self.held(prior, &verdict);
        let wait = bound || held;
        if bound {
            self.warnings.push(DEFERRED.into());
        } else if held {
            self.warnings.push(PENDING.into());
        }
        let forced = force || self.setup.ahead;
        let stage = stage(&self.p, &verdict, prior.start, bound, held, forced);
        let reason = verdict
            .trigger
            .filter(|_| !wait)
            .map(Reason::from)
            .or(forced.then_some(Reason::Forced))
            .or((continued || (wait && outside)).then_some(Reason::Continued));
        Due {
            reason,
            stage,
            total_tokens: verdict.total_tokens,
        }
    }

    /// Precompute: while the thread fits, a summary the upstream would
    /// write waits for the one written ahead (none waits on the upstream).
    /// Decided on the default tail, its warnings discarded: the writer
    /// step decides again on the real cut.
    fn held(&self, prior: &Prior, verdict: &policy::Verdict) -> bool {
        let (t, start) = (&self.t, prior.start);
        let tail = split::tail_start(
            &split::units(&t.messages, start),
            t.messages.len(),
            start,
            self.p.min_recent_messages as usize,
        );
        let span = self.count.messages[start..tail].iter().sum::<usize>() as u64;
        let upstream = Upstream {
            model: self.setup.model.clone(),
            allowed: self.ask.upstream_allowed,
        };
        let decided = decide(
            self.ask.strategy,
            upstream,
            (span, verdict.total_tokens),
            &self.p,
            &mut Vec::new(),
        );
        matches!(
            decided,
            Ok(Decision::Write(Writer::Llm(_) | Writer::Hybrid(_)))
        )
    }
}

/// Where the thread stands for precompute. `bound`: due but deferred in a
/// tool loop; `held`: due but waiting for the summary written ahead;
/// `forced`: compressed now whatever the verdict (nothing to write ahead).
fn stage(
    p: &Profile,
    v: &policy::Verdict,
    start: usize,
    bound: bool,
    held: bool,
    forced: bool,
) -> Stage {
    let progress = [
        Some(v.messages_percent),
        Some(v.tokens_percent),
        v.iterations_percent,
    ]
    .into_iter()
    .flatten()
    .fold(0.0, f64::max)
        / 100.0;
    match () {
        _ if forced || p.precompute_at <= 0.0 => Stage::Quiet,
        _ if bound => Stage::Ahead { start },
        _ if v.trigger.is_some() => Stage::Due { start, held },
        _ if v.held_back.is_none() && progress >= p.precompute_at => Stage::Ahead { start },
        _ => Stage::Quiet,
    }
}

/// Why a due summary was not written this turn.
const DEFERRED: &str = "a summary is due, but the agent is inside a tool loop whose final assistant message must start with its thinking block, which a new summary before it would invalidate (Anthropic binds thinking to its prefix); deferred while the thread fits its window";

/// Why a due summary was not written this turn (precompute).
const PENDING: &str = "a summary is due; the one written ahead for it is not ready, and the thread fits its window: the previous summary (or none) stays this turn, and the summary written ahead comes in on a later one";
