//! Per-iteration summaries: each old agent iteration in two or three
//! sentences, and one string of them for an agent's system prompt.

use serde::Serialize;

use super::{Previous, split};
use crate::summarize::{KeySettings, Sections, Strategy, Written, canonical, counting, hashes};
use crate::thread::Message;
use crate::tokens::Counter;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IterationSummary {
    pub iteration: u64,
    pub content: String,
}

/// The per-iteration summaries of `messages[start..cut]` and their joined
/// injection (after the previous summary), keyed like any other summary.
pub fn write(
    messages: &[Message],
    start: usize,
    cut: usize,
    previous: &Option<Previous>,
    c: &Counter<'_>,
) -> (Written, Vec<IterationSummary>) {
    let span = &messages[start..cut];
    let its = split::iterations(messages, start);
    let its = &its[..span.len()];
    let summaries = summarize(span, its);
    let prior = previous.as_ref().map(|p| p.content.as_str());
    let content = injection(prior, &summaries);
    let (key, _) = hashes(
        &canonical(span),
        &KeySettings {
            writer: "iterations",
            model: None,
            prior,
            limit: 0,
            counting: counting(c),
            instructions: None,
            extra: format!("{its:?}"),
        },
    );
    (
        Written::new(content, Strategy::Heuristic, None, key),
        summaries,
    )
}

/// One summary per iteration of `span`; `its[i]` is the iteration of `span[i]`.
fn summarize(span: &[Message], its: &[u64]) -> Vec<IterationSummary> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < span.len() {
        let it = its[i];
        let end = (i..span.len())
            .find(|&j| its[j] != it)
            .unwrap_or(span.len());
        let s = crate::summarize::extract_sections(&canonical(&span[i..end]));
        out.push(IterationSummary {
            iteration: it,
            content: sentences(&s, end - i),
        });
        i = end;
    }
    out
}

fn sentences(s: &Sections, messages: usize) -> String {
    let mut parts = Vec::new();
    match s.requests.items.last() {
        Some(r) => parts.push(format!("The user asked {r}.")),
        None => parts.push(format!("{messages} messages of agent work.")),
    }
    if !s.tools.0.is_empty() {
        let tools: Vec<String> = s.tools.0.iter().map(|(k, n)| format!("{k} ×{n}")).collect();
        let files = if s.files.items.is_empty() {
            String::new()
        } else {
            let shown: Vec<&str> = s.files.items.iter().take(5).map(String::as_str).collect();
            let more = s.files.items.len().saturating_sub(5);
            let more = if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            };
            format!(" on {}{more}", shown.join(", "))
        };
        parts.push(format!("The agent used {}{files}.", tools.join(", ")));
    }
    match (s.errors.items.first(), &s.state) {
        (Some(e), _) => parts.push(format!("It hit `{e}`.")),
        (None, Some(state)) => parts.push(format!(
            "It ended with: {}",
            crate::summarize::clip(state, 200)
        )),
        (None, None) => {}
    }
    parts.join(" ")
}

/// The summaries as one block for a system prompt, after a previous summary.
fn injection(prior: Option<&str>, summaries: &[IterationSummary]) -> String {
    let mut out = String::new();
    if let Some(p) = prior {
        out.push_str(p.trim());
        out.push_str("\n\n");
    }
    out.push_str("Earlier iterations:\n");
    for s in summaries {
        out.push_str(&format!("- Iteration {}: {}\n", s.iteration, s.content));
    }
    out.trim_end().to_string()
}
