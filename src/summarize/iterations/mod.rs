//! Per-iteration summaries (`group_by: "iteration"`): each old iteration of
//! an agent's work in two or three sentences, joined into one text (the
//! injection) for the agent's system prompt.
//!
//! They go through the [`SummaryService`](super::SummaryService) like any
//! summary (cache, single flight, heuristic fallback): the request carries
//! the iteration of each canonical message, and the written content is the
//! injection. The list of summaries is read back from that text, so a cached
//! injection and a fresh one give the same list.
//!
//! The injection extends a previous one: its iterations are kept and the new
//! ones follow, and the whole is bounded by the request's limit
//! ([`bound`]), so repeated compression cannot snowball.

mod bound;
mod facts;
mod llm;

use std::ops::Range;

use serde::Serialize;

use super::{SummaryRequest, Usage, Writer};
use crate::upstream::{Upstream, UpstreamError};
use bound::{Entry, Piece};

/// The line that opens the list of iterations in an injection.
const HEADER: &str = "Earlier iterations:";

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IterationSummary {
    pub iteration: u64,
    pub content: String,
}

/// Writes the injection for `req` (a per-iteration request), extending
/// `prior`. `llm` and `hybrid` call the upstream (when there is one);
/// extracting, fitting and tokenizing run on the blocking pool.
pub(super) async fn write(
    up: Option<&Upstream>,
    req: &SummaryRequest,
    prior: Option<String>,
) -> Result<(String, Option<Usage>), UpstreamError> {
    let groups = groups(req.iterations.as_deref().unwrap_or_default());
    let (stories, usage) = match (&req.settings.writer, up) {
        (Writer::Llm(m) | Writer::Hybrid(m), Some(up)) => {
            let (stories, usage) = llm::write(up, m, req, &groups).await?;
            (Some(stories), Some(usage))
        }
        _ => (None, None),
    };
    let req = req.clone();
    let content = super::cpu(move || assemble(&req, &groups, stories, prior.as_deref())).await;
    Ok((content, usage))
}

/// The heuristic injection for `req` on the calling thread (no runtime).
pub(super) fn write_offline(req: &SummaryRequest) -> String {
    let groups = groups(req.iterations.as_deref().unwrap_or_default());
    assemble(req, &groups, None, req.settings.prior.as_deref())
}

/// The summaries an injection holds, in order.
pub fn summaries(injection: &str) -> Vec<IterationSummary> {
    split(injection)
        .2
        .into_iter()
        .map(|(iteration, content)| IterationSummary { iteration, content })
        .collect()
}

/// `injection` re-fitted into `max_tokens` (when the budget is tighter than
/// the limit it was written for): the same rules as when writing it, so it
/// stays a list that reads back.
pub fn refit(injection: &str, max_tokens: usize, c: &crate::tokens::Counter<'_>) -> String {
    let (head, left_out, entries) = split(injection);
    let entries: Vec<Entry> = entries
        .into_iter()
        .map(|(iteration, text)| Entry {
            iteration,
            parts: vec![Piece::Text(text)],
        })
        .collect();
    bound::injection(head.as_deref(), left_out, &entries, max_tokens, c)
}

/// Runs of equal iterations: `its[i]` is the iteration of canonical message `i`.
fn groups(its: &[u64]) -> Vec<(u64, Range<usize>)> {
    let mut out: Vec<(u64, Range<usize>)> = Vec::new();
    for (i, &it) in its.iter().enumerate() {
        match out.last_mut() {
            Some((last, r)) if *last == it => r.end = i + 1,
            _ => out.push((it, i..i + 1)),
        }
    }
    out
}

/// The entries of the span (heuristic facts, the model's sentences, or
/// both for `hybrid`) after those of `prior`, fitted under the limit.
fn assemble(
    req: &SummaryRequest,
    groups: &[(u64, Range<usize>)],
    stories: Option<Vec<String>>,
    prior: Option<&str>,
) -> String {
    let hybrid = matches!(req.settings.writer, Writer::Hybrid(_));
    let (head, left_out, earlier) = prior.map(split).unwrap_or_default();
    let mut entries: Vec<Entry> = earlier
        .into_iter()
        .map(|(iteration, text)| Entry {
            iteration,
            parts: vec![Piece::Text(text)],
        })
        .collect();
    for (i, (it, range)) in groups.iter().enumerate() {
        let mut parts = Vec::new();
        if stories.is_none() || hybrid {
            parts.push(Piece::Facts(Box::new(facts::Facts::of(
                &req.span[range.clone()],
            ))));
        }
        if let Some(story) = stories.as_ref().and_then(|s| s.get(i)) {
            parts.push(Piece::Text(story.clone()));
        }
        match entries.last_mut() {
            // The previous injection ended inside this iteration: one entry.
            Some(last) if last.iteration == *it => last.parts.extend(parts),
            _ => entries.push(Entry {
                iteration: *it,
                parts,
            }),
        }
    }
    bound::injection(
        head.as_deref(),
        left_out,
        &entries,
        req.settings.limit,
        &req.settings.counter,
    )
}

/// An injection's parts: the text before its list (a previous plain
/// summary), how many iterations it already left out, and its entries. A
/// text without the list is all head.
fn split(text: &str) -> (Option<String>, usize, Vec<(u64, String)>) {
    let lines: Vec<&str> = text.lines().collect();
    let Some(at) = lines.iter().position(|l| l.trim() == HEADER) else {
        let head = text.trim();
        return ((!head.is_empty()).then(|| head.to_string()), 0, Vec::new());
    };
    let head = lines[..at].join("\n").trim().to_string();
    let mut left_out: usize = 0;
    let mut entries: Vec<(u64, String)> = Vec::new();
    for line in &lines[at + 1..] {
        let line = line.trim();
        let item = line.strip_prefix("- ").unwrap_or(line);
        if let Some((n, rest)) = item
            .strip_prefix("Iteration ")
            .and_then(|r| r.split_once(": "))
            .and_then(|(n, rest)| Some((n.parse::<u64>().ok()?, rest)))
        {
            entries.push((n, rest.trim().to_string()));
        } else if let Some(n) = item
            .strip_prefix('(')
            .and_then(|r| r.split_once(' '))
            .filter(|(_, rest)| rest.starts_with("earlier iteration"))
            .and_then(|(n, _)| n.parse::<usize>().ok())
        {
            left_out = left_out.saturating_add(n);
        } else if let Some((_, last)) = entries.last_mut().filter(|_| !item.is_empty()) {
            // A line of an entry that was not kept on one line.
            last.push(' ');
            last.push_str(item);
        }
    }
    ((!head.is_empty()).then_some(head), left_out, entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_are_runs() {
        assert_eq!(
            groups(&[1, 1, 2, 2, 2, 5]),
            [(1, 0..2), (2, 2..5), (5, 5..6)]
        );
        assert!(groups(&[]).is_empty());
    }

    #[test]
    fn an_injection_splits_back_into_its_parts() {
        let text = "A plain summary.\n\nEarlier iterations:\n- (2 earlier iterations left out)\n- Iteration 3: Did x.\n- Iteration 4: Did y.";
        let (head, left_out, entries) = split(text);
        assert_eq!(head.as_deref(), Some("A plain summary."));
        assert_eq!(left_out, 2);
        assert_eq!(
            entries,
            [(3, "Did x.".to_string()), (4, "Did y.".to_string())]
        );
        assert_eq!(summaries(text)[1].content, "Did y.");
        assert_eq!(split("Just text.").0.as_deref(), Some("Just text."));
    }
}
