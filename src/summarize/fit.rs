//! The one way to fit a text to a size, in characters or tokens (binary-searched:
//! tokens do not add up over a text's pieces), cut as [`How`] says.

use std::borrow::Cow;

use super::salience::{score, sentences, words};
use crate::thread::{Keep, Message, cut_to};
use crate::tokens::Counter;

/// The size a text must fit.
#[derive(Clone, Copy)]
pub enum Size<'a> {
    Chars(usize),
    /// Tokens, as the function counts them.
    Tokens(usize, &'a dyn Fn(&str) -> usize),
}

/// Where a text too long for its size is cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum How {
    /// Anywhere, `…` marking the cut.
    End,
    /// After the last line or sentence end that fits, unmarked.
    LineEnd,
    /// Its middle out, `…[truncated N characters]…` in its place.
    Middle,
    /// Its most telling sentences ([`score`]) in order, ` … ` between.
    Telling,
}

/// The tokens of `span`, counted only until they reach `enough` (a span is
/// often the whole history).
pub fn span_tokens(span: &[Message], c: &Counter<'_>, enough: usize) -> usize {
    let mut sum = 0;
    for m in span {
        if sum >= enough {
            break;
        }
        sum += c.message(m).tokens;
    }
    sum
}

/// `text`, trimmed, in at most `size`.
pub fn fit(text: &str, size: Size<'_>, how: How) -> String {
    let text = text.trim();
    let (max, count) = match size {
        Size::Chars(max) => return chars(text, max, how),
        Size::Tokens(max, count) => (max, count),
    };
    if count(text) <= max {
        return text.to_string();
    }
    // No token is longer than 32 characters.
    let hi = text.chars().count().min(max.saturating_mul(32));
    match largest(hi, |n| count(&chars(text, n, how)) <= max) {
        0 => String::new(),
        n => chars(text, n, how),
    }
}

/// The largest `n` in `0..=hi` with `fits(n)` (monotone): a binary search.
pub fn largest(hi: usize, fits: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut hi) = (0, hi);
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        match fits(mid) {
            true => lo = mid,
            false => hi = mid - 1,
        }
    }
    lo
}

/// `text` (trimmed) in at most `max` characters.
fn chars(text: &str, max: usize, how: How) -> String {
    let head = |n: usize| text.char_indices().nth(n).map_or(text, |(i, _)| &text[..i]);
    if head(max).len() == text.len() {
        return text.to_string();
    }
    match how {
        How::End => format!("{}…", head(max.saturating_sub(1)).trim_end()),
        How::LineEnd => {
            let s = head(max);
            let end = s.rfind(['\n', '.']).map_or(s.len(), |i| i + 1);
            s[..end].trim_end().to_string()
        }
        How::Middle => cut_to(text, max, Keep::Both).unwrap_or_else(|| text.to_string()),
        How::Telling => telling(text, max),
    }
}

/// Highest score a sentence counts for: a bucket bound for [`telling`].
const MAX_SCORE: u32 = 15;

/// [`How::Telling`] for a text longer than `max` characters (bucketed: linear).
fn telling(text: &str, max: usize) -> String {
    // (start, end) byte ranges of the sentences, trimmed, and their length.
    let mut parts: Vec<(usize, usize, usize)> = Vec::new();
    let mut at = 0;
    for s in sentences(text) {
        let start = at + (s.len() - s.trim_start().len());
        let end = at + s.trim_end().len();
        at += s.len();
        if end > start {
            parts.push((start, end, text[start..end].chars().count()));
        }
    }
    let mut buckets: Vec<Vec<usize>> = vec![Vec::new(); MAX_SCORE as usize + 1];
    for (i, &(s, e, _)) in parts.iter().enumerate() {
        buckets[score(&text[s..e]).min(MAX_SCORE) as usize].push(i);
    }
    // Each kept sentence costs its length and a separator.
    let mut kept: Vec<Option<(Cow<str>, bool)>> = vec![None; parts.len()];
    let mut used = 0;
    for &i in buckets.iter().rev().flatten() {
        let (s, e, len) = parts[i];
        let room = max.saturating_sub(used + 3);
        if len <= room {
            kept[i] = Some((Cow::Borrowed(&text[s..e]), true));
            used += len + 3;
        } else if room >= 16 && score(&text[s..e]) > 0 {
            let part = squeeze(&text[s..e], room, false);
            used += part.chars().count() + 3;
            kept[i] = Some((Cow::Owned(part), false));
        }
    }
    let mut out = String::new();
    // The previous kept sentence, and whether it was kept whole.
    let mut last: Option<(usize, bool)> = None;
    for (i, k) in kept.iter().enumerate() {
        let Some((part, whole)) = k else { continue };
        match last {
            // Adjacent whole sentences keep what was between them (a line break).
            Some((j, true)) if j + 1 == i && *whole => {
                let between = &text[parts[j].1..parts[i].0];
                out.push_str(match between.chars().count() {
                    0..=3 => between,
                    _ if between.contains('\n') => "\n",
                    _ => " ",
                });
            }
            Some(_) => out.push_str(" … "),
            None if i > 0 || !whole => out.push_str("… "),
            None => {}
        }
        out.push_str(part);
        last = Some((i, *whole));
    }
    if last.is_some_and(|(j, whole)| j + 1 < parts.len() || !whole) {
        out.push_str(" …");
    }
    if out.is_empty() {
        // No room for even that: the most telling sentence, squeezed.
        let best = buckets.iter().rev().flatten().next().copied().unwrap_or(0);
        let (s, e, _) = parts.get(best).copied().unwrap_or((0, text.len(), 0));
        return squeeze(&text[s..e], max, true);
    }
    out
}

/// A sentence cut to its telling words with (`891 ms`) or without their
/// neighbours, else at the end; ` … ` marks the gaps.
fn squeeze(sentence: &str, max: usize, edges: bool) -> String {
    let ws: Vec<(&str, u32)> = words(sentence).collect();
    for radius in [1, 0] {
        let keep = |i: usize| {
            let lo = i.saturating_sub(radius);
            ws[lo..=(i + radius).min(ws.len() - 1)]
                .iter()
                .any(|w| w.1 > 0)
        };
        let mut out = String::new();
        let mut gap = false;
        for (i, (w, _)) in ws.iter().enumerate() {
            if !keep(i) {
                gap = true;
                continue;
            }
            match (out.is_empty(), gap) {
                (true, true) if edges => out.push_str("… "),
                (true, _) => {}
                (false, true) => out.push_str(" … "),
                (false, false) => out.push(' '),
            }
            out.push_str(w);
            gap = false;
        }
        if gap && edges && !out.is_empty() {
            out.push_str(" …");
        }
        if !out.is_empty() && out.chars().count() <= max {
            return out;
        }
    }
    chars(sentence.trim(), max, How::End)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> usize {
        s.split_whitespace().count()
    }

    #[test]
    fn each_way_fits_its_size() {
        assert_eq!(fit(" abcdef ", Size::Chars(4), How::End), "abc…");
        assert_eq!(fit("abc", Size::Chars(4), How::End), "abc");
        let text = "First line.\nSecond line, longer";
        assert_eq!(fit(text, Size::Chars(20), How::LineEnd), "First line.");
        let middle = fit(&"x".repeat(200), Size::Chars(60), How::Middle);
        assert!(middle.chars().count() <= 60 && middle.contains("…[truncated "));
        // Multi-byte characters are cut on their boundaries.
        assert_eq!(fit("ééééé", Size::Chars(3), How::End), "éé…");
    }

    #[test]
    fn a_size_in_tokens_keeps_the_longest_cut_that_fits() {
        let text = "one two three. four five six. seven eight nine.";
        assert_eq!(
            fit(text, Size::Tokens(6, &words), How::LineEnd),
            "one two three. four five six."
        );
        assert_eq!(
            fit(text, Size::Tokens(4, &words), How::End),
            "one two three. four…"
        );
        assert_eq!(fit(text, Size::Tokens(0, &words), How::End), "");
        assert_eq!(fit(text, Size::Tokens(9, &words), How::End), text);
    }

    #[test]
    fn telling_keeps_the_facts_in_order() {
        let text =
            "Hello there. The port is 5433.\nThanks a lot for that. Call Priya on Monday. Bye now.";
        let telling = |t: &str, max| fit(t, Size::Chars(max), How::Telling);
        assert_eq!(telling(text, 200), text);
        assert_eq!(
            telling(text, 50),
            "… The port is 5433. … Call Priya on Monday. …"
        );
        assert_eq!(
            telling(
                "I found that the p95 latency of export is 891 ms since build b13x.",
                50
            ),
            "… the p95 latency … is 891 ms … build b13x. …"
        );
        let long = format!("{} end", "x".repeat(100));
        assert!(telling(&long, 20).chars().count() <= 20);
        assert!(telling(text, 60).chars().count() <= 60);
    }
}
