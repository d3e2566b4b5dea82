//! Per-iteration summaries (`group_by: "iteration"`): each old iteration in
//! a few sentences, joined into one text (the injection) that is read back,
//! so a cached injection and a fresh one agree. It extends the previous one
//! byte for byte within the limit ([`bound`]), folding the oldest ([`fold`]).

mod bound;
mod entry;
mod facts;
mod fold;
mod fragment;
mod llm;

use std::ops::Range;

use serde::Serialize;

use super::anchors::anchors;
use super::{SummaryRequest, Usage, Writer};
use crate::tokens::Counter;
use crate::upstream::{Upstream, UpstreamError};
pub(super) use bound::HEADER;
use bound::Rolling;
use entry::{Entry, Piece};

/// One iteration's entry of a `context_injection`.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct IterationSummary {
    /// The iteration; for the rolling entry, the last iteration it folds.
    pub iteration: u64,
    /// Only on the rolling entry (`Earlier iterations A–B`, first in the
    /// list): the first iteration it folds. When an entry per iteration does
    /// not fit the bound, the oldest are folded into it (their requests,
    /// error lines and decisions kept longest), never left out.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub first_iteration: Option<u64>,
    /// What the iteration did, within its share of the size bound; an LLM's
    /// two or three sentences, or the heuristic's facts (requests, failing
    /// commands, errors, files, decisions, an empty output noted). For the
    /// rolling entry, `[N] …` per folded iteration.
    pub content: String,
}

/// Whether `prior` holds a list of iterations, which an injection extending
/// it appends to (see [`crate::summarize::refolded`]).
pub(super) fn lists(prior: &str) -> bool {
    prior.lines().any(|l| l.trim() == HEADER)
}

/// Writes the injection for `req`, extending `prior`.
pub(super) async fn write(
    up: Option<&Upstream>,
    req: &SummaryRequest,
    prior: Option<String>,
) -> Result<(String, Option<Usage>), UpstreamError> {
    let groups = groups(req.form.iterations());
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

/// The summaries an injection holds, in order.
pub fn summaries(injection: &str) -> Vec<IterationSummary> {
    let p = split(injection);
    let rolling = p.rolling.map(|r| IterationSummary {
        iteration: r.last,
        first_iteration: Some(r.first),
        content: r.text,
    });
    let entries = p
        .entries
        .into_iter()
        .map(|(iteration, content)| IterationSummary {
            iteration,
            first_iteration: None,
            content,
        });
    rolling.into_iter().chain(entries).collect()
}

/// `injection` re-fitted into a tighter `max_tokens` by the rules that wrote it.
pub fn refit(injection: &str, max_tokens: usize, c: &Counter<'_>) -> String {
    extended(split(injection), Vec::new(), max_tokens, c)
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

/// The span's entries (facts, the model's sentences, or both) after `prior`'s.
fn assemble(
    req: &SummaryRequest,
    groups: &[(u64, Range<usize>)],
    stories: Option<Vec<String>>,
    prior: Option<&str>,
) -> String {
    let hybrid = matches!(req.settings.writer, Writer::Hybrid(_));
    let new = groups.iter().enumerate().map(|(i, (it, range))| {
        let span = &req.span[range.clone()];
        let mut parts = Vec::new();
        if stories.is_none() || hybrid {
            parts.push(Piece::Facts(Box::new(facts::Facts::of(span))));
        }
        if let Some(story) = stories.as_ref().and_then(|s| s.get(i)) {
            parts.push(Piece::Text(story.clone()));
        }
        let anchors = Some(anchors(span));
        Entry {
            iteration: *it,
            parts,
            anchors,
        }
    });
    let p = prior.map(split).unwrap_or_default();
    extended(p, new.collect(), req.settings.limit, &req.settings.counter)
}

/// `p` (a previous injection) with the `new` entries after it, in `limit` tokens.
fn extended(p: Parts, new: Vec<Entry>, limit: usize, c: &Counter<'_>) -> String {
    let mut entries: Vec<Entry> = p
        .entries
        .into_iter()
        .map(|(iteration, text)| Entry::written(iteration, text))
        .collect();
    for e in new {
        match entries.last_mut() {
            // The previous injection ended inside this iteration: one entry.
            Some(last) if last.iteration == e.iteration => {
                last.parts.extend(e.parts);
                last.anchors = e.anchors;
            }
            _ => entries.push(e),
        }
    }
    let (head, rolling) = (p.head.as_deref(), p.rolling.as_ref());
    bound::injection(head, p.left_out, rolling, &entries, limit, c)
}

/// An injection's parts.
#[derive(Default)]
struct Parts {
    /// The text before its list (a previous plain summary).
    head: Option<String>,
    /// Iterations an injection of an older condense left out.
    left_out: usize,
    rolling: Option<Rolling>,
    entries: Vec<(u64, String)>,
}

/// An injection read back. A text without the list is all head.
fn split(text: &str) -> Parts {
    let lines: Vec<&str> = text.lines().collect();
    let Some(at) = lines.iter().position(|l| l.trim() == HEADER) else {
        let head = text.trim();
        return Parts {
            head: (!head.is_empty()).then(|| head.to_string()),
            ..Parts::default()
        };
    };
    let head = lines[..at].join("\n").trim().to_string();
    let mut p = Parts {
        head: (!head.is_empty()).then_some(head),
        ..Parts::default()
    };
    for line in &lines[at + 1..] {
        let line = line.trim();
        let item = line.strip_prefix("- ").unwrap_or(line);
        if let Some((n, rest)) = item
            .strip_prefix("Iteration ")
            .and_then(|r| r.split_once(": "))
            .and_then(|(n, rest)| Some((n.parse::<u64>().ok()?, rest)))
        {
            p.entries.push((n, rest.trim().to_string()));
        } else if let Some(r) = item
            .strip_prefix(bound::ROLLING)
            .filter(|_| p.rolling.is_none() && p.entries.is_empty())
            .and_then(rolling_entry)
        {
            p.rolling = Some(r);
        } else if let Some(n) = item
            .strip_prefix('(')
            .and_then(|r| r.split_once(' '))
            .filter(|(_, rest)| rest.starts_with("earlier iteration"))
            .and_then(|(n, _)| n.parse::<usize>().ok())
        {
            p.left_out = p.left_out.saturating_add(n);
        } else if !item.is_empty() {
            // A line of an entry that was not kept on one line.
            let last = match (p.entries.last_mut(), p.rolling.as_mut()) {
                (Some((_, last)), _) => last,
                (None, Some(r)) => &mut r.text,
                (None, None) => continue,
            };
            last.push(' ');
            last.push_str(item);
        }
    }
    p
}

/// `A–B: text` (the rest of a rolling entry's line).
fn rolling_entry(rest: &str) -> Option<Rolling> {
    let (range, text) = rest.split_once(": ")?;
    let (first, last) = range.split_once(['–', '-'])?;
    Some(Rolling {
        first: first.trim().parse().ok()?,
        last: last.trim().parse().ok()?,
        text: text.trim().to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summarize::refolded;

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
        let p = split(text);
        assert_eq!(p.head.as_deref(), Some("A plain summary."));
        assert_eq!(p.left_out, 2);
        assert_eq!(
            p.entries,
            [(3, "Did x.".to_string()), (4, "Did y.".to_string())]
        );
        assert_eq!(summaries(text)[1].content, "Did y.");
        assert_eq!(split("Just text.").head.as_deref(), Some("Just text."));

        let text = "Earlier iterations:\n- Earlier iterations 1–7: [1] Asked a. [7] Asked b.\n- Iteration 8: Did z.";
        let s = summaries(text);
        assert_eq!(s[0].first_iteration, Some(1));
        assert_eq!(s[0].iteration, 7);
        assert_eq!(s[0].content, "[1] Asked a. [7] Asked b.");
        assert_eq!((s[1].iteration, s[1].first_iteration), (8, None));
    }

    /// A new entry of `words` words.
    fn entry(iteration: u64, words: usize) -> Entry {
        Entry {
            iteration,
            parts: vec![Piece::Text(format!("{}.", vec!["word"; words].join(" ")))],
            anchors: Some(Default::default()),
        }
    }

    #[test]
    fn a_list_leaves_room_for_twenty_rounds() {
        let models = crate::tokens::ModelRegistry::embedded();
        let c = crate::tokens::CountSpec::resolve(
            &models,
            "gpt-4o",
            None,
            None,
            crate::tokens::Method::Bpe,
        )
        .counter(crate::tokens::Encoders::global());
        // Forty entries of 60 words fit 3,000 tokens but fill them: the
        // first list is folded to leave room. (Under about 1,300 tokens,
        // half the room holds fewer rounds of the least appended entry.)
        for (limit, n) in [(3000, 40), (2000, 12), (2000, 200)] {
            let new: Vec<Entry> = (1..=n).map(|i| entry(i, 60)).collect();
            let mut text = extended(Parts::default(), new, limit, &c);
            let first = c.text(&text).tokens;
            assert!(first <= limit * 3 / 4, "{limit}: {first} tokens: {text}");
            for round in 1..=bound::ROUNDS as u64 {
                let next = extended(split(&text), vec![entry(n + round, 60)], limit, &c);
                assert!(!refolded(&text, &next), "{limit}: round {round}: {next}");
                assert!(c.text(&next).tokens <= limit);
                text = next;
            }
        }
    }

    #[test]
    fn a_prefix_kept_is_no_refold() {
        let prior = "Earlier iterations:\n- Iteration 1: a.";
        assert!(!refolded(
            prior,
            "Earlier iterations:\n- Iteration 1: a.\n- Iteration 2: b."
        ));
        assert!(refolded(
            prior,
            "Earlier iterations:\n- Earlier iterations 1–1: [1] a.\n- Iteration 2: b."
        ));
        assert!(!refolded(
            "A plain summary.",
            "Earlier iterations:\n- Iteration 2: b."
        ));
    }
}
