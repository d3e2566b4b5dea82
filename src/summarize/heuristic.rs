//! The heuristic summary: extracted sections, shrunk until they fit the
//! token limit. Extending it appends what the new span says under `### Since
//! then` (the same sections, only what the previous summary does not say),
//! so each round's summary starts with the previous one byte for byte and a
//! provider's prompt cache keeps hitting (issue 36), each addendum in a
//! [`ROUNDS`]th of the room left. A summary written afresh leaves room for
//! that many addenda ([`afresh`]). Only when the bound has no room left, or
//! the new span says more than half the bound holds, are the sections
//! merged and re-fitted (a re-fold, leaving the same room), and the answer
//! says so ([`refolded`](super::refolded)).

use super::extract::extract;
use super::fit::{How, Size, fit, span_tokens};
use super::sections::{Caps, SINCE, Sections};
use super::{Strategy, SummaryRequest};
use crate::thread::Message;
use crate::tokens::Counter;

/// Rounds an addendum leaves room for: each takes at most this share of the
/// room the bound leaves (as a per-iteration list's entries do).
const ROUNDS: usize = 20;

/// Fewest tokens an addendum is given: its heading and a short line.
const MIN_ADDENDUM: usize = 10;

/// The heuristic summary of `req.span[from..]` extending `prior`, on the blocking
/// pool; the receipt's extraction (`extracted`) is reused on the same span.
pub(super) async fn write(
    req: &SummaryRequest,
    from: usize,
    prior: Option<String>,
    extracted: Option<Sections>,
) -> String {
    let (span, limit, c) = (req.span.clone(), req.settings.limit, req.settings.counter);
    super::cpu(move || written(&span[from..], prior.as_deref(), extracted, limit, &c)).await
}

/// [`write`] on this thread: CPU work.
pub(super) fn written(
    span: &[Message],
    prior: Option<&str>,
    extracted: Option<Sections>,
    limit: usize,
    c: &Counter<'_>,
) -> String {
    let extracted = extracted.unwrap_or_else(|| extract(span, Caps::default().text));
    // At most the previous summary and half the new span: at the full
    // limit a span of short messages would come back longer.
    let half = span_tokens(span, c, limit.saturating_mul(2)) / 2;
    let most = limit.min(prior.map_or(0, |p| c.text(p).tokens) + half);
    let text = fitted(extracted, prior, limit, most.max(1), |s| c.text(s).tokens);
    if !text.is_empty() {
        return text;
    }
    let (n, plural) = (span.len(), if span.len() == 1 { "" } else { "s" });
    format!("({n} message{plural} with no requests, files, commands or errors to note.)")
}

/// Summarizes `span`, extending `prior` (a previous summary's content), in at
/// most `max_tokens` tokens as measured by `count`.
pub fn heuristic(
    span: &[Message],
    prior: Option<&str>,
    max_tokens: usize,
    count: impl Fn(&str) -> usize,
) -> String {
    fitted(
        extract(span, Caps::default().text),
        prior,
        max_tokens,
        max_tokens,
        count,
    )
}

/// Whether `text` is in the heuristic's format (its sections parse back):
/// an extension appends to it.
pub(super) fn appends(text: &str) -> bool {
    text.trim_start().starts_with("### ")
}

/// What `extracted` says, extending `prior`, in at most `most` tokens of
/// the bound `limit`: appended when there is room, else merged into it.
fn fitted(
    extracted: Sections,
    prior: Option<&str>,
    limit: usize,
    most: usize,
    count: impl Fn(&str) -> usize,
) -> String {
    if let Some(prior) = prior.filter(|p| appends(p)) {
        let new = extracted.clone().without(&Sections::parse(prior));
        let appended = match new.is_empty() {
            // Nothing new: the previous summary as it is.
            true => Some(prior.trim_end().to_string()).filter(|p| count(p) <= limit),
            false => appended(prior, &new, limit, most, &count),
        };
        if let Some(text) = appended {
            return text;
        }
    }
    // Written afresh or re-folded: room left for the next rounds.
    merged(extracted, prior, most.min(afresh(limit)), count)
}

/// Tokens a summary written afresh (or re-folded) may take of `limit`: it
/// leaves [`ROUNDS`] addenda at their least (and a newline each) free, so
/// that many rounds append before the next re-fold; at most an eighth of
/// a small bound.
pub(super) fn afresh(limit: usize) -> usize {
    limit - (ROUNDS * (MIN_ADDENDUM + 1)).min(limit / 8)
}

/// Tokens `content` (as the heuristic wrote it in `limit`) may take once
/// repaired: the room its writing left, never the next rounds' (an
/// addendum's repair stays in the addendum's share).
pub(super) fn repair_bound(content: &str, limit: usize, count: impl Fn(&str) -> usize) -> usize {
    let since = format!("\n### {SINCE}\n");
    match content.rfind(&since) {
        Some(at) => {
            let before = count(&content[..at]);
            (before + share(limit, before)).min(limit)
        }
        None => afresh(limit),
    }
}

/// An addendum's share of the room `limit` leaves after `before` tokens.
fn share(limit: usize, before: usize) -> usize {
    (limit.saturating_sub(before) / ROUNDS).max(MIN_ADDENDUM)
}

/// `prior`, then `new` under `### Since then` in its share of the room the
/// bound leaves (a [`ROUNDS`]th of it, so that many rounds append); None
/// when it does not fit, or `new` says more than half the bound holds
/// (a sliver of it would lose the rest: a re-fold keeps more).
fn appended(
    prior: &str,
    new: &Sections,
    limit: usize,
    most: usize,
    count: &impl Fn(&str) -> usize,
) -> Option<String> {
    let prior = prior.trim_end();
    let before = count(prior);
    let render = |s: &Sections| format!("### {SINCE}\n{}", s.render());
    if count(&render(new)) > limit / 2 {
        return None;
    }
    let share = share(limit, before);
    // Never longer than what it replaces, but for its least.
    let share = share.min(most.saturating_sub(before).max(MIN_ADDENDUM));
    let addendum = Caps::default().fitted(new).fit(share, count, 0.97, |caps| {
        let mut s = new.clone();
        s.apply(caps);
        render(&s)
    });
    let text = format!("{prior}\n{addendum}");
    (count(&text) <= limit).then_some(text)
}

/// What `extracted` says, merged into `prior`, in at most `max_tokens`.
fn merged(
    extracted: Sections,
    prior: Option<&str>,
    max_tokens: usize,
    count: impl Fn(&str) -> usize,
) -> String {
    let older = prior.map(Sections::parse).unwrap_or_default();
    let all = older.merge(extracted);
    Caps::default()
        .fitted(&all)
        .fit(max_tokens, &count, 0.97, |caps| {
            let mut s = all.clone();
            s.apply(caps);
            s.render()
        })
}

/// A summary's content re-fitted into a tighter `max_tokens`: the
/// heuristic's sections by their own rules, other text at a line end.
pub fn shrink(content: &str, strategy: Strategy, max_tokens: usize, c: &Counter<'_>) -> String {
    let count = |s: &str| c.text(s).tokens;
    match strategy {
        Strategy::Heuristic => merged(Sections::default(), Some(content), max_tokens, count),
        _ => fit(content, Size::Tokens(max_tokens, &count), How::LineEnd),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::thread::{RawThread, parse};

    fn span() -> Vec<Message> {
        let messages = vec![
            json!({"role": "user", "content": "Fix src/lib.rs. Don't add dependencies."}),
            json!({"role": "assistant", "content": "I'll read it first.", "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "run_command", "arguments": "{\"command\": \"cargo test\"}"}}
            ]}),
            json!({"role": "tool", "tool_call_id": "a", "content": "error[E0308]: mismatched types\n --> src/lib.rs:3:5\n\nexit status: 101"}),
            json!({"role": "assistant", "content": "Fixed the type in src/lib.rs; tests pass."}),
        ];
        parse(RawThread {
            messages: &messages,
            ..Default::default()
        })
        .unwrap()
        .messages
    }

    fn words(s: &str) -> usize {
        s.split_whitespace().count()
    }

    #[test]
    fn sections_hold_what_the_span_says() {
        let s = heuristic(&span(), None, 2000, words);
        assert!(
            s.contains("\"Fix src/lib.rs. Don't add dependencies.\""),
            "{s}"
        );
        assert!(s.contains("### Tools used\nrun_command ×1"), "{s}");
        // The request says the path: the files list does not say it again.
        assert!(!s.contains("### Files referenced"), "{s}");
        assert!(s.contains("- `cargo test` (exit status 101)"), "{s}");
        assert!(s.contains("- error[E0308]: mismatched types"), "{s}");
        assert!(s.contains("- I'll read it first."), "{s}");
        assert!(
            s.ends_with("### Latest state\nFixed the type in src/lib.rs; tests pass."),
            "{s}"
        );
    }

    #[test]
    fn it_is_deterministic_and_fits_the_limit() {
        let a = heuristic(&span(), None, 2000, words);
        assert_eq!(a, heuristic(&span(), None, 2000, words));
        for limit in [60, 30, 10, 3] {
            assert!(
                words(&heuristic(&span(), None, limit, words)) <= limit,
                "limit {limit}"
            );
        }
    }

    #[test]
    fn extending_keeps_multi_line_requests_and_others_sections_whole() {
        let prompt = "<environment_context>\n  <cwd>/home/dev/proj</cwd>\n</environment_context>\n\nFix src/lib.rs.";
        let first = parse(RawThread {
            messages: &[json!({"role": "user", "content": prompt})],
            ..Default::default()
        })
        .unwrap()
        .messages;
        let mut summary = heuristic(&first, None, 2000, words);
        // What a fidelity check appends, and a section someone else wrote.
        summary
            .push_str("\n### Also in the span\n- port 5433\n### Notes\nkeep this\n\\### escaped");
        for _ in 0..3 {
            summary = heuristic(&span(), Some(&summary), 2000, words);
        }
        let back = Sections::parse(&summary);
        assert_eq!(back.requests.items[0], format!("\"{prompt}\""), "{summary}");
        assert_eq!(back.also.items, ["port 5433"], "{summary}");
        assert_eq!(
            back.other,
            [("Notes".to_string(), "keep this\n### escaped".to_string())],
            "{summary}"
        );
    }

    #[test]
    fn extending_appends_what_is_new_byte_for_byte() {
        let first = heuristic(&span(), None, 2000, words);
        let more = parse(RawThread {
            messages: &[
                json!({"role": "user", "content": "Now bump the version in Cargo.toml."}),
                json!({"role": "assistant", "content": "Bumped it to 0.2.0."}),
            ],
            ..Default::default()
        })
        .unwrap()
        .messages;
        let next = heuristic(&more, Some(&first), 2000, words);
        assert!(next.starts_with(&first), "{next}");
        let addendum = &next[first.len()..];
        assert!(addendum.starts_with("\n### Since then\n"), "{next}");
        // Only what is new: the old request is not said again.
        assert!(!addendum.contains("Fix src/lib.rs."), "{next}");
        assert!(addendum.contains("Cargo.toml"), "{next}");
        // Read back, the addendum joins the sections before it.
        let back = Sections::parse(&next);
        assert_eq!(back.requests.items.len(), 2, "{next}");
        assert_eq!(back.state.as_deref(), Some("Bumped it to 0.2.0."));
        assert!(
            back.stated
                .items
                .contains(&"Fixed the type in src/lib.rs; tests pass.".to_string()),
            "{next}"
        );
        // Re-folded (here: shrunk), it is one set of sections again.
        let c = crate::tokens::CountSpec::resolve(
            &crate::tokens::ModelRegistry::embedded(),
            "gpt-4o",
            None,
            None,
            crate::tokens::Method::Bpe,
        )
        .counter(crate::tokens::Encoders::global());
        let shrunk = shrink(&next, Strategy::Heuristic, 1000, &c);
        assert!(!shrunk.contains("### Since then"), "{shrunk}");
        assert_eq!(shrunk.matches("### Latest state").count(), 1, "{shrunk}");
    }

    #[test]
    fn extending_does_not_snowball() {
        let mut summary = heuristic(&span(), None, 40, words);
        for _ in 0..20 {
            summary = heuristic(&span(), Some(&summary), 40, words);
            assert!(words(&summary) <= 40);
        }
        assert!(summary.contains("run_command ×21"), "{summary}");
    }
}
