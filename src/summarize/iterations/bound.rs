//! The injection under the summary's limit (`max_summary_tokens`, at most
//! 30% of the budget): the whole text, list and all, never takes more.
//!
//! How the room is shared: every iteration gets an equal share, and what a
//! short one does not need is shared among the longer ones (max-min
//! fairness), so a one-line iteration stays whole and a long one is cut to
//! its share. Cutting lowers an entry's item caps the way the plain
//! heuristic does (decisions and the latest state go first, the user's
//! requests and failing commands last). When an equal share would fall
//! below [`MIN_SHARE`] tokens, too little for two sentences, the oldest
//! iterations are left out instead and counted in one
//! `(N earlier iterations left out)` line: the newest are what an agent
//! acts on (under a limit too small for one share, the list is only that
//! line). A previous plain summary ahead of the list keeps at most a
//! quarter of the limit.

use super::HEADER;
use super::facts::Facts;
use crate::summarize::clip;
use crate::tokens::Counter;

/// Fewest tokens an iteration's summary is cut to before older iterations
/// are left out.
pub const MIN_SHARE: usize = 40;

/// One iteration's summary in the making.
pub(super) struct Entry {
    pub iteration: u64,
    pub parts: Vec<Piece>,
}

pub(super) enum Piece {
    /// The heuristic's facts, cut by lowering their caps.
    Facts(Box<Facts>),
    /// Written text (the model's, or a previous injection's), cut at the end.
    Text(String),
}

impl Piece {
    fn full(&self) -> String {
        match self {
            Piece::Facts(f) => f.full(),
            Piece::Text(t) => one_line(t),
        }
    }

    fn fit(&self, max: usize, c: &Counter<'_>) -> String {
        match self {
            Piece::Facts(f) => f.fit(max, c),
            Piece::Text(t) => clip_tokens(&one_line(t), max, c),
        }
    }
}

/// The injection: `head`, then the list of `entries` (oldest first), in at
/// most `limit` tokens. `left_out` iterations were left out before.
pub(super) fn injection(
    head: Option<&str>,
    left_out: usize,
    entries: &[Entry],
    limit: usize,
    c: &Counter<'_>,
) -> String {
    let count = |s: &str| c.text(s).tokens;
    let head = head
        .map(|h| clip_tokens(h.trim(), limit / 4, c))
        .filter(|h| !h.is_empty());
    let full: Vec<Vec<String>> = entries
        .iter()
        .map(|e| e.parts.iter().map(Piece::full).collect())
        .collect();
    let sizes: Vec<Vec<usize>> = full
        .iter()
        .map(|parts| parts.iter().map(|p| count(p)).collect())
        .collect();
    // What the frame and the labels cost: the frame with the most digits
    // (an upper bound), and each label once, summed from the newest back,
    // so leaving out the oldest is a walk, not a recount.
    let frame = [left_out, left_out.saturating_add(entries.len())]
        .iter()
        .map(|&n| count(&render(head.as_deref(), n, &[])))
        .max()
        .unwrap_or(0);
    let mut labels = vec![0; entries.len() + 1];
    for (i, e) in entries.iter().enumerate().rev() {
        labels[i] = labels[i + 1] + count(&format!("- Iteration {}: \n", e.iteration));
    }
    let mut keep = entries.len();
    // Tokens taken off the room after a text came out over the limit
    // (tokens of parts do not add up exactly to those of the whole).
    let mut slack = 0;
    let mut text = String::new();
    for _ in 0..64 {
        let room_for =
            |keep: usize| limit.saturating_sub(frame + labels[entries.len() - keep] + slack);
        while keep > 0 && room_for(keep) / keep < MIN_SHARE {
            keep -= 1;
        }
        let first = entries.len() - keep;
        let room = room_for(keep);
        let totals: Vec<usize> = sizes[first..].iter().map(|s| s.iter().sum()).collect();
        let cap = share(&totals, room);
        let lines: Vec<(u64, String)> = (first..entries.len())
            .map(|i| {
                let inner = share(&sizes[i], cap.min(totals[i - first]));
                let parts: Vec<String> = entries[i]
                    .parts
                    .iter()
                    .zip(&full[i])
                    .zip(&sizes[i])
                    .map(|((p, whole), &n)| {
                        if n <= inner {
                            whole.clone()
                        } else {
                            p.fit(inner, c)
                        }
                    })
                    .filter(|p| !p.is_empty())
                    .collect();
                (entries[i].iteration, parts.join(" "))
            })
            .collect();
        text = render(head.as_deref(), left_out.saturating_add(first), &lines);
        let n = count(&text);
        if n <= limit {
            return text;
        }
        slack += n - limit;
    }
    // Not reached in practice; the bound holds whatever happens, and the
    // list still says what was left out.
    if text.is_empty() {
        text = render(head.as_deref(), left_out.saturating_add(entries.len()), &[]);
    }
    clip_tokens(&text, limit, c)
}

/// The largest cap such that `sizes`, each cut to it, add up to at most `room`.
fn share(sizes: &[usize], room: usize) -> usize {
    let (mut lo, mut hi) = (0, sizes.iter().copied().max().unwrap_or(0));
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if sizes.iter().map(|&s| s.min(mid)).sum::<usize>() <= room {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    lo
}

fn render(head: Option<&str>, left_out: usize, lines: &[(u64, String)]) -> String {
    let mut out = String::new();
    if let Some(h) = head {
        out.push_str(h);
        out.push_str("\n\n");
    }
    out.push_str(HEADER);
    out.push('\n');
    if left_out > 0 {
        let s = if left_out == 1 { "" } else { "s" };
        out.push_str(&format!("- ({left_out} earlier iteration{s} left out)\n"));
    }
    for (it, content) in lines {
        out.push_str(&format!("- Iteration {it}: {content}\n"));
    }
    out.trim_end().to_string()
}

/// `text` on one line, its runs of white space made single spaces: each
/// entry of the list is one line, so the list can be read back.
pub fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The longest cut of `text` (marked with `…`) that fits `max` tokens.
pub fn clip_tokens(text: &str, max: usize, c: &Counter<'_>) -> String {
    if c.text(text).tokens <= max {
        return text.to_string();
    }
    // No token is longer than a few dozen characters: a cut longer than
    // 32 characters a token cannot fit, so the search starts below that.
    let (mut lo, mut hi) = (0, text.chars().count().min(max.saturating_mul(32)));
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if c.text(&clip(text, mid)).tokens <= max {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    if lo == 0 {
        String::new()
    } else {
        clip(text, lo)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::{CountSpec, Encoders, Method, ModelRegistry};

    fn counter() -> Counter<'static> {
        let models = ModelRegistry::embedded();
        CountSpec::resolve(&models, "gpt-4o", None, None, Method::Bpe).counter(Encoders::global())
    }

    fn entry(iteration: u64, words: usize) -> Entry {
        Entry {
            iteration,
            parts: vec![Piece::Text(format!("{}.", vec!["word"; words].join(" ")))],
        }
    }

    #[test]
    fn the_share_is_max_min_fair() {
        assert_eq!(share(&[10, 100, 100], 110), 50);
        assert_eq!(share(&[10, 20], 1000), 20);
        assert_eq!(share(&[], 5), 0);
    }

    #[test]
    fn short_entries_stay_whole_and_long_ones_are_cut() {
        let c = counter();
        let entries = [entry(1, 5), entry(2, 2000), entry(3, 2000)];
        let text = injection(None, 0, &entries, 300, &c);
        assert!(c.text(&text).tokens <= 300, "{text}");
        assert!(
            text.contains("- Iteration 1: word word word word word.\n"),
            "{text}"
        );
        assert!(text.contains("- Iteration 2: word"), "{text}");
        assert!(text.contains("- Iteration 3: word"), "{text}");
    }

    #[test]
    fn too_many_for_a_share_leaves_out_the_oldest() {
        let c = counter();
        let entries: Vec<Entry> = (1..=40).map(|i| entry(i, 200)).collect();
        let text = injection(Some("Before."), 2, &entries, 400, &c);
        assert!(c.text(&text).tokens <= 400, "{text}");
        assert!(
            text.starts_with("Before.\n\nEarlier iterations:\n- ("),
            "{text}"
        );
        let kept = text.matches("- Iteration ").count();
        assert!((5..40).contains(&kept), "{text}");
        assert!(
            text.contains(&format!("({} earlier iterations left out)", 2 + 40 - kept)),
            "{text}"
        );
        // The newest are kept, the oldest left out.
        assert!(text.contains("- Iteration 40: word"), "{text}");
        assert!(!text.contains("- Iteration 1: "), "{text}");
    }

    #[test]
    fn hundreds_of_iterations_still_give_a_list() {
        let c = counter();
        for (n, limit) in [(200, 2000), (1000, 500), (3000, 2000)] {
            let entries: Vec<Entry> = (1..=n).map(|i| entry(i, 30)).collect();
            let text = injection(None, 0, &entries, limit, &c);
            assert!(c.text(&text).tokens <= limit, "{n}: {text}");
            let kept = text.matches("- Iteration ").count();
            assert!(kept > 0, "{n}: {text}");
            assert!(
                text.contains(&format!("- Iteration {n}: word")),
                "{n}: {text}"
            );
            assert!(
                text.contains(&format!(
                    "({} earlier iterations left out)",
                    n as usize - kept
                )),
                "{n}: {text}"
            );
        }
    }
}
