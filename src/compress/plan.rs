//! Planning a compression: the verdict, where to cut, what to summarize.
//!
//! Planning is CPU work and needs no I/O; writing the summary may call an
//! upstream LLM. Keeping them apart lets the service plan on the blocking
//! pool, await the summary, and finish on the blocking pool again.

use std::ops::Range;

use super::{Error, Outcome, Previous, Reason, Request, Written, split};
use crate::policy::{self, Profile};
use crate::summarize::{KeyInput, Strategy, content_hash, prefix_hashes};
use crate::thread::{FieldError, Message, Thread};
use crate::tokens::{Counter, ThreadCount};

/// A plan, or the answer when there is nothing to do.
pub enum Planned {
    Done(Outcome),
    Pending(Plan),
}

/// Everything decided before the summary is written. Owns its data so it
/// can cross an `.await`.
pub struct Plan {
    pub(crate) thread: Thread,
    pub(crate) profile: Profile,
    pub(crate) budget: usize,
    pub(crate) count: ThreadCount,
    pub(crate) pinned: usize,
    /// First message not covered by a previous summary.
    pub(crate) start: usize,
    /// First message of the verbatim tail.
    pub(crate) cut: usize,
    pub(crate) units: Vec<Range<usize>>,
    pub(crate) previous: Option<Previous>,
    /// The previous summary is a message of this thread (client style b).
    pub(crate) in_thread: bool,
    pub(crate) reason: Reason,
    pub(crate) strategy: Strategy,
    pub(crate) summary_limit: usize,
    pub(crate) keep_recent_iterations: Option<usize>,
    pub(crate) instructions: Option<String>,
    pub(crate) warnings: Vec<String>,
}

/// What the summarizer must write.
#[derive(Debug, Clone)]
pub struct SummaryJob {
    pub span: Vec<Message>,
    /// The content of the summary this one extends.
    pub prior: Option<String>,
    /// Most tokens the content may take.
    pub limit: usize,
    /// Heuristic, Llm or Hybrid.
    pub strategy: Strategy,
    pub instructions: Option<String>,
    pub max_summary_tokens: u64,
    /// Tokens of the span, for choosing and chunking.
    pub span_tokens: usize,
}

impl SummaryJob {
    /// The content hash of this job's summary when written by `model`.
    pub fn key(&self, strategy: Strategy, model: Option<&str>) -> String {
        content_hash(&self.key_input(strategy, model))
    }

    /// The rolling hashes of the span's prefixes under the same settings.
    pub fn prefix_hashes(&self, strategy: Strategy, model: Option<&str>) -> Vec<String> {
        prefix_hashes(&self.key_input(strategy, model))
    }

    fn key_input<'a>(&'a self, strategy: Strategy, model: Option<&'a str>) -> KeyInput<'a> {
        KeyInput {
            span: &self.span,
            prior: self.prior.as_deref(),
            strategy: strategy.as_str(),
            model,
            prompt_version: super::PROMPT_VERSION,
            // The effective bound (max_summary_tokens or 30% of the budget) shapes the text.
            max_summary_tokens: self.limit as u64,
            instructions: self.instructions.as_deref(),
        }
    }

    /// The heuristic summary of this job.
    pub fn heuristic(&self, c: &Counter<'_>) -> Written {
        let content =
            crate::summarize::heuristic(&self.span, self.prior.as_deref(), self.limit, |s| {
                c.text(s).tokens
            });
        let content = if content.is_empty() {
            format!(
                "({} messages with no requests, files, commands or errors to note.)",
                self.span.len()
            )
        } else {
            content
        };
        Written::new(
            content,
            Strategy::Heuristic,
            None,
            self.key(Strategy::Heuristic, None),
        )
    }
}

pub fn plan(req: &Request<'_>) -> Result<Planned, Error> {
    let t = req.thread;
    let c = req.counter;
    let p = req.profile;
    let count = c.thread(t);
    let pinned = t.pinned_len();
    let mut warnings = Vec::new();

    let previous = previous_summary(req, pinned, &mut warnings)?;
    // The first message the summary does not cover, moved back to a unit
    // boundary: a summary that ends inside a tool unit must not leave the
    // unit's results without their call.
    let after = previous.as_ref().map_or(pinned, |s| s.last + 1);
    let start = split::unit_start(&split::units(&t.messages, pinned), after).max(pinned);
    let in_thread = previous.as_ref().is_some_and(|s| s.in_thread);
    let summary_tokens = match &previous {
        Some(_) if in_thread => count.messages[pinned],
        Some(prev) => {
            policy::summary_message_tokens(c, prev.messages_summarized, &prev.content) as usize
        }
        None => 0,
    };
    let mut assessed = policy::assess(t, &count, previous.as_ref().map(|s| s.last), 0);
    assessed.total_tokens += summary_tokens as u64;
    let verdict = policy::decide(p, assessed, req.context_window);
    let Some(reason) = verdict
        .trigger
        .map(Reason::from)
        .or(req.force.then_some(Reason::Forced))
    else {
        return Ok(Planned::Done(Outcome::unchanged(t, &count, warnings)));
    };

    let budget = req.context_window.saturating_sub(p.response_reserve) as usize;
    let n = t.messages.len();
    let units = split::units(&t.messages, start);
    let mut cut = match req.keep_recent_iterations {
        Some(keep) => split::iteration_tail_start(&t.messages, &units, start, keep),
        None => split::tail_start(&units, n, start, p.min_recent_messages as usize),
    };
    let fixed = t.system.iter().map(|m| c.message(m).tokens).sum::<usize>()
        + count.messages[..pinned].iter().sum::<usize>()
        + count.tools
        + crate::tokens::REPLY_PRIMING;
    if fixed > budget {
        return Err(Error::DoesNotFit(format!(
            "the pinned prefix (system prompt, leading instructions and tool schemas) alone takes {fixed} tokens; the budget is {budget} (context_window {} - response_reserve {})",
            req.context_window, p.response_reserve
        )));
    }
    let summary_limit = (p.max_summary_tokens as usize).min(budget * 3 / 10).max(16);
    let span_tokens = |from: usize, to: usize| count.messages[from..to].iter().sum::<usize>();
    let strategy = resolve_strategy(
        req.strategy,
        req.upstream,
        span_tokens(start, cut) as u64,
        p,
    )?;

    // Shrink the tail by whole units while the summary's share would not fit,
    // down to min_recent_messages.
    if req.keep_recent_iterations.is_none() {
        let reserve = if strategy == Strategy::Truncate {
            0
        } else {
            summary_limit + 16
        };
        while fixed + reserve + span_tokens(cut, n) > budget {
            let Some(next) = units.iter().find(|u| u.start == cut).map(|u| u.end) else {
                break;
            };
            if next >= n || n - next < p.min_recent_messages as usize {
                break;
            }
            cut = next;
        }
    }
    // With no summary message, the conversation must open with a user turn.
    if strategy == Strategy::Truncate && previous.is_none() {
        cut = units
            .iter()
            .rev()
            .map(|u| u.start)
            .find(|&s| s <= cut && split::opens_user_turn(&t.messages[s]))
            .unwrap_or(start);
    }
    Ok(Planned::Pending(Plan {
        thread: t.clone(),
        profile: p.clone(),
        budget,
        count,
        pinned,
        start,
        cut,
        units,
        previous,
        in_thread,
        reason,
        strategy,
        summary_limit,
        keep_recent_iterations: req.keep_recent_iterations,
        instructions: req.instructions.map(str::to_string),
        warnings,
    }))
}

impl Plan {
    /// The summary to write, if this plan needs one written by a summarizer.
    /// (Truncation writes none; per-iteration summaries are written in `finish`.)
    pub fn job(&self) -> Option<SummaryJob> {
        let span = &self.thread.messages[self.start..self.cut];
        let extends = self.previous.is_some() && !self.in_thread;
        if self.strategy == Strategy::Truncate
            || self.keep_recent_iterations.is_some()
            || (span.is_empty() && !extends)
        {
            return None;
        }
        Some(SummaryJob {
            span: span.to_vec(),
            prior: self.previous.as_ref().map(|p| p.content.clone()),
            limit: self.summary_limit,
            strategy: self.strategy,
            instructions: self.instructions.clone(),
            max_summary_tokens: self.profile.max_summary_tokens,
            span_tokens: self.count.messages[self.start..self.cut].iter().sum(),
        })
    }
}

/// `auto` is `llm` for spans of at least `llm_min_tokens` when an upstream is
/// configured, else `heuristic`; `llm` and `hybrid` need an upstream.
fn resolve_strategy(
    s: Strategy,
    upstream: bool,
    span_tokens: u64,
    p: &Profile,
) -> Result<Strategy, Error> {
    match s {
        Strategy::Auto if upstream && span_tokens >= p.llm_min_tokens => Ok(Strategy::Llm),
        Strategy::Auto => Ok(Strategy::Heuristic),
        Strategy::Llm | Strategy::Hybrid if !upstream => Err(Error::Unsupported(format!(
            "strategy `{}` needs an upstream LLM and none is configured (set CONDENSE_UPSTREAM_URL); use `heuristic`, `truncate` or `auto`",
            s.as_str()
        ))),
        other => Ok(other),
    }
}

/// The summary a compression extends: a summary message at the head of the
/// conversation wins over a `summary` object (whose indices would refer to
/// an older request).
fn previous_summary(
    req: &Request<'_>,
    pinned: usize,
    warnings: &mut Vec<String>,
) -> Result<Option<Previous>, Error> {
    let t = req.thread;
    if let Some(marker) = t.messages.get(pinned).and_then(Message::summary_marker) {
        if req.prior.is_some() {
            warnings.push(
                "the thread holds a summary message; the `summary` object was ignored".into(),
            );
        }
        return Ok(Some(Previous {
            last: pinned,
            content: marker.content,
            messages_summarized: marker.messages_summarized,
            in_thread: true,
        }));
    }
    let Some(prior) = &req.prior else {
        return Ok(None);
    };
    let content = prior.content.clone().ok_or_else(|| {
        Error::Invalid(vec![FieldError::new(
            "/summary/content",
            "is required to extend a previous summary",
        )])
    })?;
    let last = prior.last_message_idx.max(pinned.saturating_sub(1));
    let covered = prior
        .messages_summarized
        .map_or((last + 1).saturating_sub(pinned), |n| n as usize);
    Ok(Some(Previous {
        last,
        content,
        messages_summarized: covered,
        in_thread: false,
    }))
}
