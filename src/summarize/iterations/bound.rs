//! The injection under the summary's limit (`max_summary_tokens`, at most
//! 30% of the budget): the whole text, list and all, never takes more.
//!
//! Every old iteration is in it: as an entry of its own (`- Iteration N:`),
//! or folded into the rolling entry ahead of them (`- Earlier iterations
//! A–B:`, see [`fold`](super::fold)). Nothing is left out silently.
//!
//! An injection extends the previous one byte for byte: its entries (and
//! its rolling entry) stay as they were written and the new iterations
//! follow, each cut to an eighth of the room at most (the plain heuristic's
//! way: decisions and the latest state go first, the user's requests and
//! failing commands last). So round k+1 starts with round k's bytes and a
//! provider's prompt cache keeps hitting. Only when that would pass the
//! limit is the list re-folded: the oldest entries go into the rolling
//! entry until the entries left take at most a quarter of the room, and the
//! rolling entry is shrunk to what leaves a quarter free, so the next few
//! rounds append again instead of re-folding each time (unless leaving it
//! free would leave a folded iteration's text out entirely: the facts come
//! first). A previous plain
//! summary ahead of the list keeps at most a quarter of the limit.

use super::HEADER;
use super::entry::Entry;
use super::refold::refold;
use crate::summarize::clip;
use crate::tokens::Counter;

/// Fewest tokens a new iteration's entry is cut to.
pub const MIN_SHARE: usize = 40;

/// The rolling entry: iterations `first` to `last`, folded.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Rolling {
    pub first: u64,
    pub last: u64,
    pub text: String,
}

/// The injection: `head`, then the list (`left_out` iterations an older
/// injection left out, the `rolling` entry, then `entries`, oldest first),
/// in at most `limit` tokens. Entries written before (`Entry::written`)
/// come back as they were while the whole fits; when it does not, the
/// list is re-folded.
pub(super) fn injection(
    head: Option<&str>,
    left_out: usize,
    rolling: Option<&Rolling>,
    entries: &[Entry],
    limit: usize,
    c: &Counter<'_>,
) -> String {
    let frame = Frame::new(head, left_out, limit, c);
    let list = List::appended(rolling, entries, (frame.room / 8).max(MIN_SHARE), c);
    let text = frame.render(list.rolling, &list.lines);
    if c.text(&text).tokens <= limit {
        return text;
    }
    refold(&frame, &list, c)
}

/// What surrounds the list, the same for the appended list and each try of
/// a re-fold: the previous plain summary (`head`, clipped to a quarter of
/// the limit), the count of iterations an older injection left out, the
/// limit, and the `room` the list's entries have under it.
pub(super) struct Frame {
    head: Option<String>,
    left_out: usize,
    pub limit: usize,
    pub room: usize,
}

impl Frame {
    fn new(head: Option<&str>, left_out: usize, limit: usize, c: &Counter<'_>) -> Frame {
        let head = head
            .map(|h| clip_tokens(h.trim(), limit / 4, c))
            .filter(|h| !h.is_empty());
        let bare = render(head.as_deref(), left_out, None, &[]);
        let room = limit.saturating_sub(c.text(&bare).tokens);
        Frame {
            head,
            left_out,
            limit,
            room,
        }
    }

    pub fn render(&self, rolling: Option<&Rolling>, lines: &[(u64, String)]) -> String {
        render(self.head.as_deref(), self.left_out, rolling, lines)
    }
}

/// The list as appended: the rolling entry so far, then each entry's line
/// (cut to its share of the room) beside its whole text, which a re-fold
/// reads instead of the cut.
pub(super) struct List<'a> {
    pub rolling: Option<&'a Rolling>,
    pub entries: &'a [Entry],
    pub full: Vec<String>,
    pub lines: Vec<(u64, String)>,
}

impl<'a> List<'a> {
    /// The entries after `rolling`, each cut to `cap` tokens at most.
    fn appended(
        rolling: Option<&'a Rolling>,
        entries: &'a [Entry],
        cap: usize,
        c: &Counter<'_>,
    ) -> List<'a> {
        let full: Vec<String> = entries.iter().map(Entry::full).collect();
        let lines = entries
            .iter()
            .zip(&full)
            .map(|(e, whole)| (e.iteration, e.fitted(whole, cap, c)))
            .collect();
        List {
            rolling,
            entries,
            full,
            lines,
        }
    }
}

/// The label of the rolling entry, read back by [`super::split`].
pub(super) const ROLLING: &str = "Earlier iterations ";

fn render(
    head: Option<&str>,
    left_out: usize,
    rolling: Option<&Rolling>,
    lines: &[(u64, String)],
) -> String {
    let mut out = String::new();
    if let Some(h) = head {
        out.push_str(h);
        out.push_str("\n\n");
    }
    out.push_str(HEADER);
    out.push('\n');
    if left_out > 0 {
        // Only an injection of an older condense left iterations out.
        let s = if left_out == 1 { "" } else { "s" };
        out.push_str(&format!("- ({left_out} earlier iteration{s} left out)\n"));
    }
    if let Some(r) = rolling {
        let text = if r.text.trim().is_empty() {
            "(their details did not fit the bound)"
        } else {
            r.text.trim()
        };
        out.push_str(&format!("- {ROLLING}{}–{}: {text}\n", r.first, r.last));
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
        Entry::written(iteration, format!("{}.", vec!["word"; words].join(" ")))
    }

    #[test]
    fn what_fits_is_appended_whole() {
        let c = counter();
        let entries = [entry(1, 5), entry(2, 20), entry(3, 20)];
        let text = injection(None, 0, None, &entries, 300, &c);
        assert!(
            text.starts_with("Earlier iterations:\n- Iteration 1: word word word word word.\n"),
            "{text}"
        );
        assert!(text.ends_with(&format!("- Iteration 3: {}.", vec!["word"; 20].join(" "))));
    }

    #[test]
    fn a_long_new_entry_is_cut_to_an_eighth_of_the_room() {
        let c = counter();
        let entries = [entry(1, 5), entry(2, 2000)];
        let text = injection(None, 0, None, &entries, 800, &c);
        assert!(c.text(&text).tokens <= 800, "{text}");
        let two = text.split("- Iteration 2: ").nth(1).unwrap();
        assert!(c.text(two).tokens <= 100, "{two}");
        assert!(two.ends_with('…'), "{two}");
    }

    #[test]
    fn too_many_for_the_bound_are_folded_not_left_out() {
        let c = counter();
        let entries: Vec<Entry> = (1..=40).map(|i| entry(i, 200)).collect();
        let text = injection(Some("Before."), 0, None, &entries, 400, &c);
        assert!(c.text(&text).tokens <= 400, "{text}");
        assert!(
            text.starts_with("Before.\n\nEarlier iterations:\n- Earlier iterations 1–"),
            "{text}"
        );
        assert!(!text.contains("left out"), "{text}");
        // The newest stay entries of their own; the rolling entry covers
        // every iteration before them.
        let kept: Vec<u64> = super::super::summaries(&text)
            .iter()
            .filter(|s| s.first_iteration.is_none())
            .map(|s| s.iteration)
            .collect();
        assert!(!kept.is_empty() && kept.ends_with(&[40]), "{text}");
        assert!(
            text.contains(&format!("- Earlier iterations 1–{}: ", kept[0] - 1)),
            "{text}"
        );
    }

    #[test]
    fn hundreds_of_iterations_still_give_a_list() {
        let c = counter();
        for (n, limit) in [(200, 2000), (1000, 500), (3000, 2000), (100, 40)] {
            let entries: Vec<Entry> = (1..=n).map(|i| entry(i, 30)).collect();
            let text = injection(None, 0, None, &entries, limit, &c);
            assert!(c.text(&text).tokens <= limit, "{n}: {text}");
            if limit >= 500 {
                assert!(text.contains("- Earlier iterations 1–"), "{n}: {text}");
                assert!(
                    text.contains(&format!("- Iteration {n}: word")),
                    "{n}: {text}"
                );
            }
        }
    }
}
