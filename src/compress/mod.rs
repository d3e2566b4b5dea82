//! The compression engine: keep the pinned prefix and the recent messages
//! verbatim, replace the older span with a summary, fit the budget, and
//! return a thread the provider accepts.

mod fit;
mod iterations;
mod split;
mod summary;

use serde::Serialize;

use crate::policy::{self, PriorSummary, Profile, SummaryRole, Trigger};
use crate::summarize::Strategy;
use crate::thread::{
    Cut, FieldError, Message, Role, Thread, WireFormat, summary_text, text_message, validate,
};
use crate::tokens::Counter;
use fit::Draft;

pub use iterations::IterationSummary;
pub use summary::SummaryObject;

/// Why a thread was compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    Messages,
    Tokens,
    ContextWindow,
    Forced,
}

impl From<Trigger> for Reason {
    fn from(t: Trigger) -> Self {
        match t {
            Trigger::Messages => Reason::Messages,
            Trigger::Tokens => Reason::Tokens,
            Trigger::ContextWindow => Reason::ContextWindow,
        }
    }
}

/// What a caller asks for.
pub struct Request<'a> {
    pub thread: &'a Thread,
    pub counter: &'a Counter<'a>,
    pub profile: &'a Profile,
    pub context_window: u64,
    /// The summary object of a previous compression (client keeps full history).
    pub prior: Option<PriorSummary>,
    pub strategy: Strategy,
    pub force: bool,
    pub instructions: Option<&'a str>,
    /// `group_by: "iteration"`: how many recent iterations stay verbatim.
    pub keep_recent_iterations: Option<usize>,
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("invalid request")]
    Invalid(Vec<FieldError>),
    #[error("{0}")]
    DoesNotFit(String),
    #[error("{0}")]
    Unsupported(String),
    #[error("the compressed thread failed validation: {0:?}")]
    Bug(Vec<FieldError>),
}

/// What compression produced.
#[derive(Debug)]
pub struct Outcome {
    pub compressed: bool,
    pub reason: Option<Reason>,
    /// The output thread (same format, system and tools as the input).
    pub thread: Thread,
    pub summary: Option<SummaryObject>,
    pub tokens_before: usize,
    pub tokens_after: usize,
    pub messages_dropped: Vec<usize>,
    pub messages_truncated: Vec<usize>,
    pub iteration_summaries: Vec<IterationSummary>,
    pub warnings: Vec<String>,
}

/// The summary a compression extends: from the request, or found in the thread.
struct Previous {
    /// Last request index it covers.
    last: usize,
    content: String,
    messages_summarized: usize,
}

pub fn compress(req: &Request<'_>) -> Result<Outcome, Error> {
    let t = req.thread;
    let c = req.counter;
    let p = req.profile;
    let count = c.thread(t);
    let pinned = t.pinned_len();
    let mut warnings = Vec::new();

    let previous = previous_summary(req, pinned, &mut warnings)?;
    let start = previous.as_ref().map_or(pinned, |s| s.last + 1);
    let in_thread = previous
        .as_ref()
        .is_some_and(|s| s.last == pinned && req.prior.is_none());
    let summary_tokens = match (&previous, in_thread) {
        (Some(_), true) => 0, // already counted as a message of the thread
        (Some(prev), false) => {
            c.text(&summary_text(prev.messages_summarized, &prev.content))
                .tokens
                + 4
        }
        (None, _) => 0,
    };
    let assessed = policy::assess(
        t,
        &count,
        previous.as_ref().map(|s| s.last),
        summary_tokens as u64,
    );
    let assessed = if in_thread {
        policy::Assessment {
            total_tokens: assessed.total_tokens + count.messages[pinned] as u64,
            ..assessed
        }
    } else {
        assessed
    };
    let verdict = policy::decide(p, assessed, req.context_window);
    let reason = verdict
        .trigger
        .map(Reason::from)
        .or(req.force.then_some(Reason::Forced));
    let unchanged = |warnings| Outcome {
        compressed: false,
        reason: None,
        thread: t.clone(),
        summary: None,
        tokens_before: count.total,
        tokens_after: count.total,
        messages_dropped: Vec::new(),
        messages_truncated: Vec::new(),
        iteration_summaries: Vec::new(),
        warnings,
    };
    let Some(reason) = reason else {
        return Ok(unchanged(warnings));
    };

    let strategy = resolve_strategy(req.strategy)?;
    let budget = req.context_window.saturating_sub(p.response_reserve) as usize;
    let n = t.messages.len();
    let units = split::units(&t.messages, start);
    let mut cut = match req.keep_recent_iterations {
        Some(keep) => split::iteration_tail_start(&t.messages, &units, start, keep),
        None => split::tail_start(&units, n, start, p.min_recent_messages as usize),
    };

    let mut draft = Draft {
        system: t.system.clone(),
        pinned: t.messages[..pinned].to_vec(),
        summary: None,
        tail: Vec::new(),
        tools_tokens: count.tools,
        truncated: Default::default(),
        dropped: Vec::new(),
    };
    let fixed = draft.fixed(c);
    if fixed > budget {
        return Err(Error::DoesNotFit(format!(
            "the pinned prefix (system prompt, leading instructions and tool schemas) alone takes {fixed} tokens; the budget is {budget} (context_window {} - response_reserve {})",
            req.context_window, p.response_reserve
        )));
    }
    let summary_limit = (p.max_summary_tokens as usize).min(budget * 3 / 10).max(16);

    // Shrink the tail by whole units while the summary's share would not fit,
    // down to min_recent_messages.
    if req.keep_recent_iterations.is_none() {
        let reserve = if strategy == Strategy::Truncate {
            0
        } else {
            summary_limit + 16
        };
        let tail_tokens = |from: usize| count.messages[from..].iter().sum::<usize>();
        while fixed + reserve + tail_tokens(cut) > budget {
            let Some(next) = units.iter().find(|u| u.start == cut).map(|u| u.end) else {
                break;
            };
            if n - next < p.min_recent_messages as usize || next >= n {
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

    let span = &t.messages[start..cut];
    let mut iteration_summaries = Vec::new();
    let mut summary = None;
    if strategy == Strategy::Truncate {
        draft.dropped.extend(start..cut);
        if let Some(prev) = &previous {
            draft.summary = Some(summary_message(
                t.format,
                p.summary_role,
                prev.messages_summarized,
                &prev.content,
            ));
        }
    } else if !span.is_empty() || (previous.is_some() && !in_thread) {
        let prior = previous.as_ref().map(|s| s.content.as_str());
        let content = match req.keep_recent_iterations {
            Some(_) => {
                let its = split::iterations(&t.messages, start);
                iteration_summaries = iterations::summarize(span, &its[..span.len()], c);
                iterations::injection(prior, &iteration_summaries)
            }
            None => summarize(span, prior, summary_limit, c),
        };
        let covered = previous.as_ref().map_or(0, |s| s.messages_summarized) + span.len();
        draft.summary = Some(summary_message(t.format, p.summary_role, covered, &content));
        summary = Some(summary::object(summary::ObjectInput {
            content,
            messages_summarized: covered,
            first_message_idx: pinned,
            last_message_idx: cut.saturating_sub(1).max(pinned),
            strategy,
            span,
            prior,
            profile: p,
            instructions: req.instructions,
            counter: c,
        }));
    } else if in_thread {
        // Nothing new to summarize: the summary message in the thread stays.
        draft.summary = Some(t.messages[pinned].clone());
    }
    draft.tail = (cut..n).map(|i| (i, t.messages[i].clone())).collect();

    fit_budget(
        &mut draft,
        t.format,
        c,
        budget,
        &units,
        cut,
        &mut summary,
        p.summary_role,
    )?;

    let out = Thread {
        format: t.format,
        system: t.system.clone(),
        messages: draft.messages(),
        tools: t.tools.clone(),
    };
    if out.messages == t.messages {
        warnings.push(
            "nothing older than the recent messages to summarize; the thread is returned unchanged"
                .into(),
        );
        return Ok(unchanged(warnings));
    }
    validate(&out).map_err(Error::Bug)?;
    let tokens_after = c.thread(&out).total;
    Ok(Outcome {
        compressed: true,
        reason: Some(reason),
        thread: out,
        summary,
        tokens_before: count.total,
        tokens_after,
        messages_dropped: draft.dropped,
        messages_truncated: draft.truncated.into_iter().collect(),
        iteration_summaries,
        warnings,
    })
}

fn resolve_strategy(s: Strategy) -> Result<Strategy, Error> {
    match s {
        // No upstream LLM is configured in this build: auto is heuristic.
        Strategy::Auto => Ok(Strategy::Heuristic),
        Strategy::Llm | Strategy::Hybrid => Err(Error::Unsupported(format!(
            "strategy `{}` needs an upstream LLM and none is configured; use `heuristic`, `truncate` or `auto`",
            s.as_str()
        ))),
        other => Ok(other),
    }
}

fn summarize(span: &[Message], prior: Option<&str>, limit: usize, c: &Counter<'_>) -> String {
    let content = crate::summarize::heuristic(span, prior, limit, |s| c.text(s).tokens);
    if content.is_empty() {
        format!(
            "({} messages with no requests, files, commands or errors to note.)",
            span.len()
        )
    } else {
        content
    }
}

fn summary_message(
    format: WireFormat,
    role: SummaryRole,
    covered: usize,
    content: &str,
) -> Message {
    // Anthropic takes system text only at the top level, and its first message must be a user turn.
    let role = match (format, role) {
        (WireFormat::OpenAi, SummaryRole::System) => Role::System,
        _ => Role::User,
    };
    text_message(format, role, summary_text(covered, content))
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
    }))
}

/// Fits the draft into the budget: cut tool results, then any text, then
/// shrink the summary, then drop the oldest tail units.
#[allow(clippy::too_many_arguments)]
fn fit_budget(
    draft: &mut Draft,
    format: WireFormat,
    c: &Counter<'_>,
    budget: usize,
    units: &[std::ops::Range<usize>],
    cut: usize,
    summary: &mut Option<SummaryObject>,
    role: SummaryRole,
) -> Result<(), Error> {
    if draft.total(c) <= budget
        || draft.cut_texts(c, format, Cut::ToolResults, budget)
        || draft.cut_texts(c, format, Cut::AnyText, budget)
    {
        return Ok(());
    }
    if let Some(obj) = summary.as_mut() {
        let room = budget
            .saturating_sub(draft.fixed(c) + draft.tail_tokens(c) + 24)
            .max(16);
        obj.shrink(room, c);
        draft.summary = Some(summary_message(
            format,
            role,
            obj.messages_summarized,
            &obj.content,
        ));
    }
    let tail_units: Vec<usize> = units
        .iter()
        .filter(|u| u.start >= cut)
        .map(|u| u.len())
        .collect();
    for len in tail_units {
        if draft.total(c) <= budget || !draft.drop_oldest_unit(len) {
            break;
        }
    }
    if draft.total(c) <= budget {
        return Ok(());
    }
    Err(Error::DoesNotFit(format!(
        "even with the summary at its smallest, long texts cut and only the newest unit kept, the thread takes {} tokens; the budget is {budget}",
        draft.total(c)
    )))
}
