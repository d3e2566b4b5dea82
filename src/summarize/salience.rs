//! What makes a sentence worth its tokens in a summary: the facts it
//! states (names, dates, numbers, identifiers, paths, commands, errors)
//! and the instructions it gives, as opposed to filler ("ok", "I'll do
//! that"). Used to pick which items a capped list keeps and which
//! sentences a long text keeps.
//!
//! A word-shape count, not a model: deterministic, one pass per text.

/// Words that make a sentence an instruction to keep; they count twice:
/// a standing rule of the user's outweighs a passing fact.
const INSTRUCTION: [&str; 17] = [
    "never",
    "always",
    "don't",
    "must",
    "should",
    "avoid",
    "only",
    "instead",
    "remember",
    "stop",
    "revert",
    "keep",
    "rule",
    "use",
    "prefer",
    "ensure",
    "unchanged",
];

/// Highest score a sentence counts for (a bucket bound for [`condense`]).
const MAX: u32 = 15;

/// How many facts and instructions `text` holds, one per word that looks
/// like a fact, two per instruction word ([`telling`]).
pub fn score(text: &str) -> u32 {
    words(text).map(|(_, t)| t).sum()
}

/// The words of `text`, each with whether it is telling: it has a digit, a
/// path or identifier character, inner capitals, or a capital where no
/// sentence starts (a name, a month), or it gives an instruction. Markup
/// (`<shell>bash</shell>`) counts for its content only.
fn words(text: &str) -> impl Iterator<Item = (&str, u32)> {
    let mut sentence_start = true;
    text.split_whitespace().map(move |raw| {
        let t = telling(raw, sentence_start);
        sentence_start = raw.ends_with(['.', '!', '?', ':']);
        (raw, t)
    })
}

fn telling(raw: &str, sentence_start: bool) -> u32 {
    let word = raw.trim_matches(|c: char| {
        matches!(
            c,
            '.' | ',' | ';' | ':' | '!' | '?' | '(' | ')' | '"' | '\'' | '[' | ']' | '{' | '}'
        )
    });
    let bare = untagged(word);
    let first = bare.chars().next();
    let fact = bare.bytes().any(|b| b.is_ascii_digit())
        || bare.contains(['/', '\\', '_', '`', '@', '=', '#', '$', '%'])
        || bare.contains("::")
        || inner(bare, '.')
        || inner(bare, '-')
        || bare.chars().skip(1).any(char::is_uppercase)
        || (!sentence_start && first.is_some_and(char::is_uppercase) && bare != "I")
            && !bare.starts_with("I'");
    if INSTRUCTION.contains(&bare.to_ascii_lowercase().as_str()) {
        2
    } else {
        u32::from(fact)
    }
}

/// `word` without `<tag>`s: `<cwd>/a/b</cwd>` is `/a/b`, `<shell>` nothing.
fn untagged(word: &str) -> &str {
    let mut w = word;
    if w.starts_with('<')
        && let Some(end) = w.find('>')
    {
        w = &w[end + 1..];
    }
    if w.ends_with('>')
        && let Some(start) = w.rfind('<')
    {
        w = &w[..start];
    }
    w
}

/// A sentence too long for `max` characters, cut to its telling words and
/// their neighbours (`891 ms`, `port 5433`), then to its telling words
/// alone, then at the end; ` … ` marks each gap inside (and at the `edges`
/// when asked). Linear.
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
    super::sections::clip(sentence, max)
}

use std::borrow::Cow;

/// Whether `c` sits between two letters or digits in `word` (`a.rs`,
/// `db-17`), not at its end.
fn inner(word: &str, c: char) -> bool {
    let b = word.as_bytes();
    word.match_indices(c).any(|(i, _)| {
        i > 0
            && i + 1 < b.len()
            && b[i - 1].is_ascii_alphanumeric()
            && b[i + 1].is_ascii_alphanumeric()
    })
}

/// `text` cut after each `.`, `!` or `?` that ends a sentence (white space
/// or the end follows, so `src/lib.rs` stays whole) and at line ends.
pub fn sentences(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let mut chars = rest.char_indices().peekable();
        let mut end = rest.len();
        while let Some((i, ch)) = chars.next() {
            let next = chars.peek().map(|&(_, n)| n);
            if ch == '\n' || (matches!(ch, '.' | '!' | '?') && next.is_none_or(char::is_whitespace))
            {
                end = i + ch.len_utf8();
                break;
            }
        }
        let (sentence, after) = rest.split_at(end);
        rest = after;
        Some(sentence)
    })
}

/// `text` in at most `max` characters, keeping its most telling sentences
/// (by [`score`], earlier first on a tie) in their order; ` … ` marks what
/// was left out between them. A text that fits is returned trimmed, line
/// breaks and all. Linear: sentences are bucketed by score, not sorted.
pub fn condense(text: &str, max: usize) -> String {
    let text = text.trim();
    if text.chars().count() <= max {
        return text.to_string();
    }
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
    let mut buckets: Vec<Vec<usize>> = vec![Vec::new(); MAX as usize + 1];
    for (i, &(s, e, _)) in parts.iter().enumerate() {
        buckets[score(&text[s..e]).min(MAX) as usize].push(i);
    }
    // Each kept sentence costs its length and a separator; one too long
    // for the room left keeps its telling words (then it is cut off from
    // its neighbours, marked by gaps).
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn facts_score_and_filler_does_not() {
        for filler in [
            "ok",
            "I'll do that.",
            "Sure, let me look into it.",
            "Thanks.",
        ] {
            assert_eq!(score(filler), 0, "{filler}");
        }
        assert_eq!(score("Priya Okafor owns it since March 3, 2025."), 4);
        assert_eq!(score("see src/a.rs and db-17 or foo_bar"), 3);
        assert_eq!(score("Never touch the config."), 2);
        assert_eq!(score("<shell>bash</shell> <cwd>/home/x</cwd>"), 1);
    }

    #[test]
    fn condensing_keeps_the_facts_in_order() {
        let text =
            "Hello there. The port is 5433.\nThanks a lot for that. Call Priya on Monday. Bye now.";
        assert_eq!(condense(text, 200), text);
        assert_eq!(
            condense(text, 50),
            "… The port is 5433. … Call Priya on Monday. …"
        );
        assert_eq!(
            condense(
                "I found that the p95 latency of export is 891 ms since build b13x.",
                50
            ),
            "… the p95 latency … is 891 ms … build b13x. …"
        );
        let long = format!("{} end", "x".repeat(100));
        assert!(condense(&long, 20).chars().count() <= 20);
        assert!(condense(text, 60).chars().count() <= 60);
    }
}
