//! The fidelity receipt: which of the span's [`anchors`](super::anchors) a
//! summary holds, the same check for every writer, and the repair that
//! appends the missing ones under [`ALSO`] within the limit (a per-iteration
//! injection is repaired entry by entry instead, see `iterations`).
//!
//! `kept` are held outside the repairs, `added` only thanks to them,
//! `missing` by neither; `kept + added + missing == anchors`.

use super::anchors::{Anchor, Anchors, Forms, MENTIONED, extracted};
use super::extract::extract;
use super::fit::{How, Size, fit, span_tokens};
use super::heuristic;
use super::hybrid::NARRATIVE;
use super::iterations::HEADER as ITERATIONS;
use super::sections::{Caps, Sections};
use super::{Fidelity, SummaryRequest, Weighed, Writer};
use crate::tokens::Counter;

/// The heading of the repair's list.
pub const ALSO: &str = "### Also in the span";

/// The anchors of `req`'s span, the extraction they come from (the
/// heuristic writes from it), and the request its writer gets: an LLM fills
/// any room, so the anchors' lines (at most half the limit) are kept from it.
pub(super) async fn prepare(req: &SummaryRequest) -> (Anchors, Sections, SummaryRequest) {
    let req = req.clone();
    super::cpu(move || {
        let sections = extract(&req.span, Caps::default().text);
        let anchors = extracted(&req.span, &sections);
        let mut writing = req;
        if !matches!(writing.settings.writer, Writer::Heuristic) && writing.form.repairs_whole() {
            let lines = lines(&anchors.items, &writing.settings.counter);
            let limit = writing.settings.limit;
            // The key stays the request's: only the writer's share changes.
            writing.settings.limit = limit - lines.min(limit / 2);
        }
        (anchors, sections, writing)
    })
    .await
}

/// `content` repaired against `anchors` in `req`'s whole limit; an
/// injection (repaired as it was written) only gets its receipt.
pub(super) async fn repaired(
    req: &SummaryRequest,
    anchors: Anchors,
    content: String,
) -> (String, Fidelity) {
    let req = req.clone();
    super::cpu(move || repaired_now(&req, &anchors, content)).await
}

/// [`repaired`] on this thread: CPU work.
fn repaired_now(req: &SummaryRequest, anchors: &Anchors, content: String) -> (String, Fidelity) {
    let (c, prior) = (req.settings.counter, req.settings.prior.as_deref());
    if !req.form.repairs_whole() {
        let receipt = check(anchors, &content);
        return (content, receipt);
    }
    // Never longer than what it replaces: the span and the summary it extends.
    let limit = req.settings.limit;
    let limit =
        limit.min(span_tokens(&req.span, &c, limit) + prior.map_or(0, |p| c.text(p).tokens));
    match req.settings.writer {
        Writer::Heuristic => {
            // In the room the heuristic left: the next rounds' stays free.
            let room = heuristic::repair_bound(&content, req.settings.limit, |s| c.text(s).tokens);
            repair(&content, anchors, limit.min(room), &c)
        }
        _ => repair_written(&content, anchors, limit, &c),
    }
}

/// The heuristic summary of `req`'s whole span, extending its prior, as
/// the service writes and repairs it (the same bytes, without the cache):
/// what a compression weighs before it decides to write one. CPU work.
pub fn heuristic_now(req: &SummaryRequest) -> Weighed {
    let sections = extract(&req.span, Caps::default().text);
    let anchors = extracted(&req.span, &sections);
    let (limit, c, prior) = (
        req.settings.limit,
        &req.settings.counter,
        req.settings.prior.as_deref(),
    );
    let text = heuristic::written(&req.span, prior, Some(sections), limit, c);
    let (content, fidelity) = repaired_now(req, &anchors, text);
    Weighed {
        key: req.key().to_string(),
        content,
        fidelity,
    }
}

/// Tokens of the anchors' `- item` lines.
fn lines<'a>(anchors: impl IntoIterator<Item = &'a Anchor>, c: &Counter<'_>) -> usize {
    let line = |a: &Anchor| c.text(&format!("- {}\n", a.item)).tokens;
    anchors.into_iter().map(line).sum()
}

/// The receipt of `text` (see the module docs).
pub fn check(anchors: &Anchors, text: &str) -> Fidelity {
    let (body, repaired) = split(text);
    let (body, whole) = (Forms::of(&body), Forms::of(text));
    let mut f = Fidelity {
        anchors: anchors.items.len(),
        left_out: anchors.left_out,
        ..Fidelity::default()
    };
    for a in &anchors.items {
        if body.holds(a) {
            f.kept += 1;
        } else if repaired && whole.holds(a) {
            f.added += 1;
        } else {
            f.missing += 1;
        }
    }
    f
}

/// `content` with the anchors it misses under [`ALSO`], in at most `limit`
/// tokens, and its receipt.
pub fn repair(
    content: &str,
    anchors: &Anchors,
    limit: usize,
    c: &Counter<'_>,
) -> (String, Fidelity) {
    let count = |s: &str| c.text(s).tokens;
    let whole = Forms::of(content);
    let missing: Vec<&Anchor> = anchors.items.iter().filter(|a| !whole.holds(a)).collect();
    let base = count(content);
    if missing.is_empty() || base >= limit {
        return (content.to_string(), check(anchors, content));
    }
    let (before, earlier, after) = parts(content);
    let room = limit - base;
    // Per-line costs summed, then the whole counted once and trimmed from the end.
    let mut used = count(&format!("\n\n{ALSO}\n")) + count("- (… 999 more left out)\n");
    let mut lines: Vec<String> = Vec::new();
    let mut added = Forms::default();
    let mut skipped = 0usize;
    for a in missing {
        // An earlier line (an error holding a path) may hold it already.
        if added.holds(a) {
            continue;
        }
        let line = format!("- {}\n", a.item);
        let cost = count(&line);
        if used + cost <= room {
            used += cost;
            added.extend(&line);
            lines.push(line);
        } else {
            skipped += 1;
        }
    }
    while !lines.is_empty() {
        let text = render(&before, &earlier, &lines, skipped, &after);
        if count(&text) <= limit {
            let receipt = check(anchors, &text);
            return (text, receipt);
        }
        lines.pop();
        skipped += 1;
    }
    (content.to_string(), check(anchors, content))
}

/// A model's summary repaired: when the missing lines do not fit beside it,
/// its text may be clipped (to a quarter of the limit at least) if that holds more.
/// A hybrid's narrative is the model's half: its sections make the room.
fn repair_written(
    content: &str,
    anchors: &Anchors,
    limit: usize,
    c: &Counter<'_>,
) -> (String, Fidelity) {
    let (text, f) = repair(content, anchors, limit, c);
    if f.missing == 0 {
        return (text, f);
    }
    let whole = Forms::of(content);
    let need = lines(anchors.items.iter().filter(|a| !whole.holds(a)), c)
        + c.text(&format!("\n\n{ALSO}\n")).tokens;
    let room = limit.saturating_sub(need).max(limit / 4);
    if room >= c.text(content).tokens {
        return (text, f);
    }
    let Some(clipped) = clip(content, room, c) else {
        return (text, f);
    };
    let (shorter, g) = repair(&clipped, anchors, limit, c);
    match g.kept + g.added > f.kept + f.added {
        true => (shorter, g),
        false => (text, f),
    }
}

/// `content` cut from its end to `room` tokens; a hybrid's sections are cut
/// instead, its narrative kept whole (None when the narrative alone is over).
fn clip(content: &str, room: usize, c: &Counter<'_>) -> Option<String> {
    let count = |s: &str| c.text(s).tokens;
    let Some(at) = content.find(NARRATIVE) else {
        return Some(fit(content, Size::Tokens(room, &count), How::End));
    };
    let (sections, narrative) = content.split_at(at);
    let left = room.checked_sub(count(narrative) + 1)?;
    let sections = fit(sections.trim_end(), Size::Tokens(left, &count), How::End);
    Some(format!("{sections}\n\n{narrative}"))
}

/// The text before and after the [`ALSO`] section (or where it goes: before an
/// injection's list or a hybrid's narrative, so either reads back), and its items.
fn parts(content: &str) -> (String, Vec<String>, String) {
    let lines: Vec<&str> = content.lines().collect();
    let (start, end) = section(&lines).unwrap_or_else(|| {
        let at = lines
            .iter()
            .position(|l| [ITERATIONS, NARRATIVE].contains(&l.trim()))
            .unwrap_or(lines.len());
        (at, at)
    });
    let items = lines
        .get(start + 1..end)
        .unwrap_or_default()
        .iter()
        .map(|l| l.trim())
        .filter(|l| l.starts_with("- ") && !l.ends_with(" more left out)"))
        .map(|l| format!("{l}\n"))
        .collect();
    let joined = |ls: &[&str]| ls.join("\n").trim().to_string();
    (joined(&lines[..start]), items, joined(&lines[end..]))
}

/// The line range of the [`ALSO`] section, to the next heading or list.
fn section(lines: &[&str]) -> Option<(usize, usize)> {
    let since = lines
        .iter()
        .rposition(|l| l.trim() == "### Since then")
        .unwrap_or(0);
    let start = since + lines[since..].iter().position(|l| l.trim() == ALSO)?;
    let end = lines[start + 1..]
        .iter()
        .position(|l| l.starts_with("### ") || l.trim() == ITERATIONS)
        .map_or(lines.len(), |i| start + 1 + i);
    Some((start, end))
}

/// The text without its repairs ([`ALSO`], [`MENTIONED`]), and whether it had any.
fn split(text: &str) -> (String, bool) {
    let lines: Vec<&str> = text.lines().collect();
    let (body, also) = match section(&lines) {
        Some((start, end)) => ([&lines[..start], &lines[end..]].concat().join("\n"), true),
        None => (text.to_string(), false),
    };
    match without_mentions(&body) {
        Some(bare) => (bare, true),
        None => (body, also),
    }
}

/// `text` without its [`MENTIONED`] sentences (each to its line's end or the
/// next fragment's `. [N] `); None when it has none.
fn without_mentions(text: &str) -> Option<String> {
    if !text.contains(MENTIONED) {
        return None;
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(MENTIONED) {
        out.push_str(&rest[..at]);
        let after = &rest[at..];
        let line = after.find('\n').unwrap_or(after.len());
        let label = after[..line]
            .match_indices(". [")
            .find(|(i, _)| {
                let digits = after[i + 3..]
                    .bytes()
                    .take_while(u8::is_ascii_digit)
                    .count();
                digits > 0 && after[i + 3 + digits..].starts_with("] ")
            })
            .map_or(line, |(i, _)| i + 2);
        rest = &after[label..];
    }
    out.push_str(rest);
    Some(out)
}

fn render(before: &str, earlier: &[String], lines: &[String], more: usize, after: &str) -> String {
    let mut out = String::from(before);
    if !earlier.is_empty() || !lines.is_empty() {
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        out.push_str(ALSO);
        out.push('\n');
        earlier.iter().chain(lines).for_each(|l| out.push_str(l));
        if more > 0 {
            out.push_str(&format!("- (… {more} more left out)\n"));
        }
    }
    let out = out.trim_end().to_string();
    match after.is_empty() {
        true => out,
        false if out.is_empty() => after.to_string(),
        false => format!("{out}\n\n{after}"),
    }
}

#[cfg(test)]
#[path = "receipt_tests.rs"]
mod tests;
