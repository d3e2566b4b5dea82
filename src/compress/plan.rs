//! Planning a compression: the verdict, where to cut, who writes the summary.
//!
//! Planning is CPU work and needs no I/O; writing the summary may call an
//! upstream LLM. Keeping them apart lets the [`Compressor`](super::Compressor)
//! plan on the blocking pool, await the summary, and finish on the blocking
//! pool again. Every decision is made here, once: the tail, the strategy and
//! model (as a [`Writer`]), the summary's size bound.

use std::ops::Range;

use super::continuity::summary_limit;
use super::previous::previous_summary;
use super::writer::{Upstream, decide};
use super::{
    Compression, Error, Outcome, Previous, Reason, Setup, binding, clear, iterations, rules, split,
};
use crate::policy::{self, OnUpstreamError, Profile};
use crate::summarize::{Strategy, SummaryRequest, SummarySettings, Writer};
use crate::thread::{Message, Thread};
use crate::tokens::{Counter, ThreadCount};

/// A plan, or the answer when there is nothing to do.
pub(super) enum Planned {
    Done(Box<Outcome>, Stage),
    Pending(Box<Plan>),
}

impl Planned {
    /// The thread's tokens, as given.
    pub fn tokens(&self) -> usize {
        match self {
            Planned::Done(outcome, _) => outcome.tokens_before,
            Planned::Pending(plan) => plan.tokens_before,
        }
    }

    /// Where the thread stands on its way to the next summary.
    pub fn stage(&self) -> Stage {
        match self {
            Planned::Done(_, stage) => *stage,
            Planned::Pending(plan) => plan.stage,
        }
    }
}

/// Where a thread stands on its way to its next summary, for precompute
/// (see [`precompute`](super::precompute)). `start` is the first message
/// no summary covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stage {
    /// Nothing to write ahead.
    Quiet,
    /// Past `precompute_at` (or due but deferred in a tool loop): the
    /// summary the due turn will need may be written ahead.
    Ahead { start: usize },
    /// Due: a summary written ahead is swapped in if there is one.
    /// `held`: the thread fits, so without one it was not written now
    /// (the previous summary stays) and waits for the one written ahead.
    Due { start: usize, held: bool },
}

/// What replaces the span.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Decision {
    /// Dropped without a summary.
    Truncate,
    /// Summarized by this writer.
    Write(Writer),
}

/// Everything decided before the summary is written. Owns its data so it
/// can cross an `.await`.
pub(super) struct Plan {
    pub thread: Thread,
    pub profile: Profile,
    pub counter: Counter<'static>,
    pub context_window: u64,
    pub budget: usize,
    pub count: ThreadCount,
    pub pinned: usize,
    /// First message not covered by a previous summary.
    pub start: usize,
    /// First message of the verbatim tail.
    pub cut: usize,
    /// The units of `messages[start..]`.
    pub units: Vec<Range<usize>>,
    pub previous: Option<Previous>,
    pub reason: Reason,
    pub decision: Decision,
    pub keep_recent_iterations: Option<usize>,
    /// The summary to write between planning and finishing, if any.
    pub job: Option<SummaryRequest>,
    pub warnings: Vec<String>,
    /// The request thread's count, before clearing.
    pub tokens_before: usize,
    /// What clearing did before planning (`count` is of the cleared thread).
    pub applied_edits: Vec<clear::AppliedEdit>,
    /// The first message clearing changed.
    pub cleared_from: Option<usize>,
    /// An active loop's final thinking must stay (see [`binding`]).
    pub thinking_required: bool,
    /// Continuity: where the reused summary is in use (see [`binding`]).
    pub in_use: Option<super::continuity::InUse>,
    /// Continuity: the caller's messages after the pinned prefix (where a
    /// summary this request carries comes into use).
    pub continuity_len: Option<usize>,
    pub stage: Stage,
}

pub(super) fn plan(req: Compression, setup: Setup) -> Result<Planned, Error> {
    let Compression {
        thread: mut t,
        profile: p,
        prior,
        strategy,
        instructions,
        force,
        keep_recent_iterations,
        upstream_allowed,
        thinking_required,
        ..
    } = req;
    let c = setup.counter;
    let mut warnings = setup.warnings;
    let mut count = c.thread(&t);
    let pinned = t.pinned_len();

    // Clear first; the verdict below is on the cleared thread, so a summary
    // is written only if one is still due.
    let tokens_before = count.total;
    let clearing = p.clear.clone().or_else(|| {
        (strategy == Strategy::ClearToolResults).then(crate::policy::ClearSettings::default)
    });
    // Clearing is not deferred in a tool loop: once it has cleared a result
    // it must go on clearing it, or the prefix the thinking saw changes
    // back. Thinking after what it clears needs `drop_block` (`binding`).
    let (applied_edits, cleared_from) = match &clearing {
        Some(s) => clear::apply(&mut t, &mut count, s, force, &c),
        None => (Vec::new(), None),
    };
    let done = |t: Thread, count: &_, warnings, edits, stage| {
        let mut outcome = rules::unchanged(t, count, setup.context_window, warnings, &p, &c);
        binding::mark_in_place(&mut outcome, cleared_from);
        let outcome = clear::report(outcome, tokens_before, edits);
        Ok(Planned::Done(Box::new(outcome), stage))
    };
    if strategy == Strategy::ClearToolResults {
        if instructions.is_some() {
            warnings.push("`summarizer.instructions` guide an LLM summary only; `clear_tool_results` writes none, so they were not used".into());
        }
        let budget = setup.context_window.saturating_sub(p.response_reserve);
        if count.total as u64 > budget {
            warnings.push(format!(
                "after clearing, the thread holds {} tokens, over its budget of {budget} (context_window {} - response_reserve {}): clearing alone cannot make it fit; use a summarizing strategy (`auto`)",
                count.total, setup.context_window, p.response_reserve
            ));
        }
        return done(t, &count, warnings, applied_edits, Stage::Quiet);
    }

    let previous = previous_summary(&t, prior, pinned, &mut warnings)?;
    // The first message the summary does not cover, moved back to a unit
    // boundary: a summary that ends inside a tool unit must not leave the
    // unit's results without their call.
    let after = previous.as_ref().map_or(pinned, |s| s.last + 1);
    let start = split::unit_start(&split::units(&t.messages, pinned), after).max(pinned);
    let summary_tokens = match &previous {
        Some(prev) if prev.in_thread => count.messages[pinned],
        Some(prev) => {
            policy::summary_message_tokens(&c, prev.messages_summarized, &prev.content) as usize
        }
        None => 0,
    };
    let recent = p.min_recent_messages as usize;
    let mut assessed = policy::assess(&t, &count, previous.as_ref().map(|s| s.last), 0, recent);
    assessed.total_tokens += summary_tokens as u64;
    assessed.compressible_tokens += summary_tokens as u64;
    let verdict = policy::decide(&p, assessed, setup.context_window);
    warnings.extend(verdict.held_back.clone());
    // A summary that stands outside the thread (found in the cache, or the
    // request's `summary` object) and stays in place when nothing new is due.
    let outside = previous.as_ref().is_some_and(|p| !p.in_thread);
    let continued = setup.in_use.is_some() && outside;
    // A new summary in an active loop waits while the thread fits (see
    // `binding`), the previous summary staying as it was; only when what
    // was forwarded before is known (a continuity cache that answered).
    let fits = verdict.trigger != Some(crate::policy::Trigger::ContextWindow);
    let due = verdict.trigger.is_some() && setup.history_known;
    let bound = due && binding::defer(&t, thinking_required, fits, force);
    // Precompute: while the thread fits, a summary the upstream would
    // write waits for the one written ahead (none waits on the upstream).
    let held = due && !bound && setup.hold && fits && !force && {
        let tail = split::tail_start(
            &split::units(&t.messages, start),
            t.messages.len(),
            start,
            p.min_recent_messages as usize,
        );
        let span = count.messages[start..tail].iter().sum::<usize>() as u64;
        let upstream = Upstream {
            model: setup.model.clone(),
            allowed: upstream_allowed,
        };
        let decided = decide(
            strategy,
            upstream,
            (span, verdict.total_tokens),
            &p,
            &mut Vec::new(),
        );
        matches!(
            decided,
            Ok(Decision::Write(Writer::Llm(_) | Writer::Hybrid(_)))
        )
    };
    let wait = bound || held;
    if bound {
        warnings.push(DEFERRED.into());
    } else if held {
        warnings.push(PENDING.into());
    }
    let stage = stage(&p, &verdict, start, bound, held, force || setup.ahead);
    let Some(reason) = verdict
        .trigger
        .filter(|_| !wait)
        .map(Reason::from)
        .or((force || setup.ahead).then_some(Reason::Forced))
        .or((continued || (wait && outside)).then_some(Reason::Continued))
    else {
        return done(t, &count, warnings, applied_edits, stage);
    };

    let budget = setup.context_window.saturating_sub(p.response_reserve) as usize;
    let n = t.messages.len();
    let units = split::units(&t.messages, start);
    let mut cut = match keep_recent_iterations {
        Some(keep) => split::iteration_tail_start(&t.messages, &units, start, keep),
        None => split::tail_start(&units, n, start, p.min_recent_messages as usize),
    };
    // Instructions in the span stay beside the summary: their tokens are
    // kept whatever the cut.
    let kept_tokens = |from: usize, to: usize| {
        (from..to)
            .filter(|&i| t.messages[i].is_instruction())
            .map(|i| count.messages[i])
            .sum::<usize>()
    };
    let fixed = count.system.unwrap_or(0)
        + count.messages[..pinned].iter().sum::<usize>()
        + count.tools
        + crate::tokens::REPLY_PRIMING;
    if fixed > budget {
        return Err(Error::DoesNotFit(format!(
            "the pinned prefix (system prompt, leading instructions and tool schemas) alone takes {fixed} tokens; the budget is {budget} (context_window {} - response_reserve {})",
            setup.context_window, p.response_reserve
        )));
    }
    let summary_limit = summary_limit(&p, setup.context_window);
    if reason == Reason::Continued {
        // Nothing new to summarize: the previous summary and everything after it.
        cut = start;
    }
    // The swap rule: a summary written ahead stands for exactly the prefix
    // it covers, every newer message verbatim, if that fits; else the cut
    // is made as without it.
    let swapped = setup.cut_at.filter(|&at| {
        reason != Reason::Continued
            && keep_recent_iterations.is_none()
            && at > start
            && at < n
            && units.iter().any(|u| u.start == at)
            && fixed
                + kept_tokens(pinned, at)
                + summary_limit
                + 16
                + count.messages[at..].iter().sum::<usize>()
                <= budget
    });
    if let Some(at) = swapped {
        cut = at;
    }
    let span_tokens = |from: usize, to: usize| count.messages[from..to].iter().sum::<usize>();
    let decision = decide(
        strategy,
        Upstream {
            model: setup.model,
            allowed: upstream_allowed,
        },
        (span_tokens(start, cut) as u64, verdict.total_tokens),
        &p,
        &mut warnings,
    )?;
    if instructions.is_some()
        && !matches!(
            decision,
            Decision::Write(Writer::Llm(_) | Writer::Hybrid(_))
        )
    {
        warnings.push(
            "`summarizer.instructions` guide an LLM summary only; this summary was not written by one, so they were not used".into(),
        );
    }

    // Shrink the tail by whole units while the summary's share would not fit,
    // down to min_recent_messages. One pass over the units: linear.
    if keep_recent_iterations.is_none() && reason != Reason::Continued && swapped.is_none() {
        let reserve = match decision {
            Decision::Truncate => 0,
            Decision::Write(_) => summary_limit + 16,
        };
        let mut tail = span_tokens(cut, n);
        let mut kept = kept_tokens(pinned, cut);
        let first = units.partition_point(|u| u.start < cut);
        for u in &units[first..] {
            if fixed + kept + reserve + tail <= budget
                || u.end >= n
                || n - u.end < p.min_recent_messages as usize
            {
                break;
            }
            tail -= span_tokens(u.start, u.end);
            kept += kept_tokens(u.start, u.end);
            cut = u.end;
        }
    }
    // With no summary message, the conversation must open with a user turn.
    if decision == Decision::Truncate && previous.is_none() {
        cut = units
            .iter()
            .rev()
            .map(|u| u.start)
            .find(|&s| s <= cut && split::opens_user_turn(&t.messages[s]))
            .unwrap_or(start);
    }
    let elsewhere = reason == Reason::Continued;
    let grouped = keep_recent_iterations.is_some();
    let job = job(&t, start, cut, &previous, &decision, elsewhere);
    // Per iteration, only iterations are summarized: none, no summary.
    let job = job.filter(|(span, _)| !(grouped && span.is_empty()));
    let job = job.map(|(span, writer)| {
        let settings = SummarySettings {
            prior: previous.as_ref().map(|p| p.content.clone()),
            limit: summary_limit,
            writer,
            instructions,
            counter: c,
            fallback: p.on_upstream_error == OnUpstreamError::Fallback,
        };
        let mut job = match grouped {
            true => iterations::request(&t.messages, start, cut, settings),
            false => SummaryRequest::new(span, settings),
        };
        // Continuity mode: indexed under the whole conversation it stands for.
        job.index = setup.anchor.as_ref().and_then(|a| a.index(cut));
        job
    });
    Ok(Planned::Pending(Box::new(Plan {
        thread: t,
        profile: p,
        counter: c,
        context_window: setup.context_window,
        budget,
        count,
        pinned,
        start,
        cut,
        units,
        previous,
        reason,
        decision,
        keep_recent_iterations,
        job,
        warnings,
        tokens_before,
        applied_edits,
        cleared_from,
        thinking_required,
        in_use: setup.in_use.filter(|_| reason == Reason::Continued),
        continuity_len: setup.anchor.as_ref().map(|a| a.len()),
        stage,
    })))
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

/// The span a summarizer must write and who writes it, if anyone:
/// truncation writes none, and a continued summary stays as it is
/// (`elsewhere`).
fn job<'t>(
    t: &'t Thread,
    start: usize,
    cut: usize,
    previous: &Option<Previous>,
    decision: &Decision,
    elsewhere: bool,
) -> Option<(&'t [Message], Writer)> {
    let span = &t.messages[start..cut];
    let extends = previous.as_ref().is_some_and(|p| !p.in_thread);
    match decision {
        Decision::Write(_) if elsewhere => None,
        Decision::Write(_) if span.is_empty() && !extends => None,
        Decision::Write(w) => Some((span, w.clone())),
        Decision::Truncate => None,
    }
}
