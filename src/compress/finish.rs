//! Finishing a compression: assemble the thread around the written summary,
//! fit it into the budget, validate it, count it.

use super::fit::Draft;
use super::{Error, Outcome, Plan, Written, iterations, split, summary};
use crate::policy::SummaryRole;
use crate::summarize::Strategy;
use crate::thread::{Cut, Message, Role, Thread, WireFormat, summary_text, text_message, validate};
use crate::tokens::{Counter, ThreadCount};

impl Outcome {
    /// The answer when nothing is due: the caller's thread, value for value.
    pub(crate) fn unchanged(t: &Thread, count: &ThreadCount, warnings: Vec<String>) -> Outcome {
        Outcome {
            compressed: false,
            reason: None,
            thread: t.clone(),
            summary: None,
            tokens_before: count.total,
            tokens_after: count.total,
            messages_dropped: Vec::new(),
            messages_truncated: Vec::new(),
            iteration_summaries: Vec::new(),
            degraded: false,
            usage: None,
            warnings,
        }
    }
}

impl Plan {
    /// Builds the compressed thread. `written` is the summary of [`Plan::job`]
    /// (None when the plan has no job).
    pub fn finish(self, c: &Counter<'_>, written: Option<Written>) -> Result<Outcome, Error> {
        let t = &self.thread;
        let n = t.messages.len();
        let role = self.profile.summary_role;
        let mut warnings = self.warnings.clone();
        let mut draft = Draft {
            system: t.system.clone(),
            pinned: t.messages[..self.pinned].to_vec(),
            summary: None,
            tail: (self.cut..n).map(|i| (i, t.messages[i].clone())).collect(),
            tools_tokens: self.count.tools,
            truncated: Default::default(),
            dropped: Vec::new(),
        };
        let span = &t.messages[self.start..self.cut];
        let covered = self
            .previous
            .as_ref()
            .map_or(0, |s| s.messages_summarized)
            .saturating_add(span.len());
        let mut iteration_summaries = Vec::new();
        let (mut degraded, mut usage) = (false, None);
        let written = match (self.strategy, self.keep_recent_iterations, written) {
            (Strategy::Truncate, _, _) => {
                draft.dropped.extend(self.start..self.cut);
                if let Some(prev) = &self.previous {
                    draft.summary = Some(summary_message(
                        t.format,
                        role,
                        prev.messages_summarized,
                        &prev.content,
                    ));
                }
                None
            }
            (_, Some(_), _) if !span.is_empty() => {
                let its = split::iterations(&t.messages, self.start);
                iteration_summaries = iterations::summarize(span, &its[..span.len()]);
                let prior = self.previous.as_ref().map(|p| p.content.as_str());
                let content = iterations::injection(prior, &iteration_summaries);
                let key = crate::summarize::content_hash(&crate::summarize::KeyInput {
                    span,
                    prior,
                    strategy: "iterations",
                    model: None,
                    prompt_version: super::PROMPT_VERSION,
                    max_summary_tokens: self.profile.max_summary_tokens,
                    instructions: None,
                });
                Some(Written::new(content, Strategy::Heuristic, None, key))
            }
            (_, _, Some(w)) => Some(w),
            _ => None,
        };
        let mut object = written.map(|w| {
            degraded = w.degraded;
            usage = w.usage;
            warnings.extend(w.warnings.iter().cloned());
            summary::object(
                w,
                covered,
                self.pinned,
                self.cut.saturating_sub(1).max(self.pinned),
                c,
            )
        });
        match &object {
            Some(o) => {
                draft.summary = Some(summary_message(
                    t.format,
                    role,
                    o.messages_summarized,
                    &o.content,
                ))
            }
            // Nothing new was summarized: the previous summary stays, as it was.
            None if draft.summary.is_none() => {
                draft.summary = match &self.previous {
                    Some(_) if self.in_thread => Some(t.messages[self.pinned].clone()),
                    Some(prev) => Some(summary_message(
                        t.format,
                        role,
                        prev.messages_summarized,
                        &prev.content,
                    )),
                    None => None,
                }
            }
            None => {}
        }

        fit_budget(
            &mut draft,
            t.format,
            c,
            self.budget,
            &self.units,
            self.cut,
            &mut object,
            role,
        )?;

        let out = Thread {
            format: t.format,
            system: t.system.clone(),
            messages: draft.messages(),
            tools: t.tools.clone(),
        };
        if out.messages == t.messages {
            warnings.push("nothing older than the recent messages to summarize; the thread is returned unchanged".into());
            return Ok(Outcome::unchanged(t, &self.count, warnings));
        }
        validate(&out).map_err(Error::Bug)?;
        let tokens_after = c.thread(&out).total;
        Ok(Outcome {
            compressed: true,
            reason: Some(self.reason),
            thread: out,
            summary: object,
            tokens_before: self.count.total,
            tokens_after,
            messages_dropped: draft.dropped,
            messages_truncated: draft.truncated.into_iter().collect(),
            iteration_summaries,
            degraded,
            usage,
            warnings,
        })
    }
}

pub(crate) fn summary_message(
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
    summary: &mut Option<summary::SummaryObject>,
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
        // Without a summary message the kept conversation must still open
        // with a user turn, so keep dropping until it does.
        let opens = draft.summary.is_some()
            || draft
                .tail
                .first()
                .is_some_and(|(_, m)| split::opens_user_turn(m));
        if (opens && draft.total(c) <= budget) || !draft.drop_oldest_unit(len) {
            break;
        }
    }
    let opens = draft.summary.is_some()
        || draft
            .tail
            .first()
            .is_some_and(|(_, m)| split::opens_user_turn(m));
    if opens && draft.total(c) <= budget {
        return Ok(());
    }
    Err(Error::DoesNotFit(format!(
        "even with the summary at its smallest, long texts cut and only the newest unit kept, the thread takes {} tokens; the budget is {budget}",
        draft.total(c)
    )))
}
