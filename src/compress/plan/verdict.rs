//! The verdict step: is a summary due, may it be written now, and where
//! the thread stands for precompute.

use super::super::{History, Mode, Reason, binding};
use super::start::Prior;
use super::{Planner, Stage};
use crate::policy::{self, Profile, Trigger};
use crate::summarize::Weighed;
use crate::tokens::CachePrices;

/// What the verdict decided.
pub(super) struct Due {
    /// Why a summary is written now; None: the thread stays as it is.
    pub reason: Option<Reason>,
    pub stage: Stage,
    /// The thread's tokens with the previous summary's (for the writer).
    pub total_tokens: u64,
    /// [`Mode::Hold`]: due while the thread fits, so an upstream summary waits
    /// for the one written ahead, with the reason it then has.
    pub hold: Option<Option<Reason>>,
    /// The heuristic summary the payback rule weighed as written, if any.
    pub weighed: Option<Weighed>,
}

impl Planner {
    /// The policy's verdict on the cleared thread with a previous summary
    /// outside it, and whether a due summary waits in an active loop.
    pub(super) fn verdict(&mut self, prior: &Prior) -> Due {
        let (t, count, p) = (&self.t, &self.count, &self.p);
        let recent = p.min_recent_messages as usize;
        let last = prior.previous.as_ref().map(|s| s.last);
        let summary = prior.summary_tokens as u64;
        let mut assessed = policy::assess(t, count, last, summary, recent);
        assessed.idle = self.ask.idle;
        // Holding a due summary back is waiting too, and waiting needs a
        // cache: without one condense cannot tell which prefix the provider
        // holds (its own summary of an earlier turn, or the client's
        // thread), so it has no cached prefix to protect.
        let cache = match self.setup.history {
            History::Unknown => CachePrices::NONE,
            _ => self.setup.cache,
        };
        // A summary the heuristic would write is weighed as written, not at
        // its bound, and handed on to be written once.
        let total = assessed.total_tokens;
        let mut weighed = None;
        let written = |t| {
            let (tokens, summary) = self.written_tokens(prior, t, total)?;
            weighed = Some(summary);
            Some(tokens)
        };
        let verdict =
            policy::decide_knowing(p, assessed, self.setup.context_window, cache, written);
        self.warnings.extend(verdict.held_back.clone());
        let outside = prior.previous.as_ref().is_some_and(|p| !p.in_thread);
        let continued = matches!(self.setup.history, History::Carried(_)) && outside;
        let kept = outside.then_some(Reason::Continued);
        // Waiting keeps the previous summary (or none): not without a cache.
        let fits = verdict.trigger != Some(Trigger::ContextWindow);
        let may_wait = verdict.trigger.is_some() && self.setup.history != History::Unknown;
        let force = self.ask.force;
        // An active loop's final thinking would be invalidated (see `binding`):
        // worth waiting for only when condense knows that block is valid now.
        let bound = may_wait
            && self.setup.history.known()
            && self.ask.thinking_required
            && fits
            && !force
            && binding::final_thinking(t, t.messages.len()).is_some();
        if bound {
            self.warnings.push(DEFERRED.into());
        }
        let forced = force || matches!(self.setup.mode, Mode::Ahead { .. });
        // A cold cache's summary comes now, written or swapped in: waiting
        // for the one written ahead would put it on a warm turn.
        let cold = verdict.trigger == Some(Trigger::ColdCache);
        let hold = may_wait
            && !bound
            && !cold
            && matches!(self.setup.mode, Mode::Hold { .. })
            && fits
            && !force;
        let stage = stage(&self.p, &verdict, prior.start, bound, forced);
        let reason = verdict
            .trigger
            .filter(|_| !bound)
            .map(Reason::from)
            .or(forced.then_some(Reason::Forced))
            .or((continued || bound).then_some(kept).flatten());
        Due {
            reason,
            stage,
            total_tokens: verdict.total_tokens,
            hold: hold.then_some(kept),
            weighed,
        }
    }
}

/// Where the thread stands for precompute. `bound`: deferred in a tool
/// loop; `forced`: compressed now whatever the verdict.
fn stage(p: &Profile, v: &policy::Verdict, start: usize, bound: bool, forced: bool) -> Stage {
    let progress = v.progress();
    match () {
        _ if forced || p.precompute_at <= 0.0 => Stage::Quiet,
        _ if bound => Stage::Ahead { start },
        _ if v.trigger.is_some() => Stage::Due { start, held: false },
        _ if v.held_back.is_none() && progress >= p.precompute_at => Stage::Ahead { start },
        _ => Stage::Quiet,
    }
}

/// Why a due summary was not written this turn.
const DEFERRED: &str = "a summary is due, but the agent is inside a tool loop whose final assistant message must start with its thinking block, which a new summary before it would invalidate (Anthropic binds thinking to its prefix); deferred while the thread fits its window";

/// Why a due summary was not written this turn (precompute).
pub(super) const PENDING: &str = "a summary is due; the one written ahead for it is not ready, and the thread fits its window: the previous summary (or none) stays this turn, and the summary written ahead comes in on a later one";
