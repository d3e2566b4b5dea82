//! The heuristic summary: extracted sections, merged into the previous
//! summary, and shrunk until they fit the token limit.

use super::extract::extract;
use super::fit::{How, Size, fit, span_tokens};
use super::sections::{Caps, Sections};
use super::{Strategy, SummaryRequest};
use crate::thread::Message;
use crate::tokens::Counter;

/// The heuristic summary of `req.span[from..]` extending `prior`, on the blocking
/// pool; the receipt's extraction (`extracted`) is reused on the same span.
pub(super) async fn write(
    req: &SummaryRequest,
    from: usize,
    prior: Option<String>,
    extracted: Option<Sections>,
) -> String {
    let (span, limit, c) = (req.span.clone(), req.settings.limit, req.settings.counter);
    super::cpu(move || {
        let (span, prior) = (&span[from..], prior.as_deref());
        let extracted = extracted.unwrap_or_else(|| extract(span, Caps::default().text));
        // At most the previous summary and half the new span: at the full
        // limit a span of short messages would come back longer.
        let half = span_tokens(span, &c, limit.saturating_mul(2)) / 2;
        let room = limit.min(prior.map_or(0, |p| c.text(p).tokens) + half);
        let text = fitted(extracted, prior, room.max(1), |s| c.text(s).tokens);
        if !text.is_empty() {
            return text;
        }
        let (n, plural) = (span.len(), if span.len() == 1 { "" } else { "s" });
        format!("({n} message{plural} with no requests, files, commands or errors to note.)")
    })
    .await
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
        count,
    )
}

/// What `extracted` says, merged into `prior`, in at most `max_tokens`.
fn fitted(
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
        Strategy::Heuristic => heuristic(&[], Some(content), max_tokens, count),
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
        assert!(s.contains("### Files referenced\nsrc/lib.rs\n"), "{s}");
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
    fn extending_does_not_snowball() {
        let mut summary = heuristic(&span(), None, 40, words);
        for _ in 0..20 {
            summary = heuristic(&span(), Some(&summary), 40, words);
            assert!(words(&summary) <= 40);
        }
        assert!(summary.contains("run_command ×21"), "{summary}");
    }
}
