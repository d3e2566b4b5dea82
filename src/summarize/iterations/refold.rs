//! The injection in its limit: the list appended, or when that passes the
//! limit, re-folded: the oldest entries go into the rolling entry (see
//! [`bound`](super::bound) for why it keeps a quarter of the room free).

use super::bound::{Frame, List, Rolling};
use super::entry::Entry;
use super::fold::{self, Fragment};
use crate::summarize::fit::{How, Size, fit};
use crate::tokens::Counter;

/// Fewest tokens a new iteration's entry is cut to.
const MIN_SHARE: usize = 40;

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

/// The list re-folded to fit the limit: the newest entries that take at
/// most a quarter of the room (at least one) stay; the others join the
/// rolling entry, which gets what room is left. Tokens of parts do not add
/// up exactly to those of the whole: what came out over the limit is taken
/// off the rolling entry's room, and it is tried again.
fn refold(frame: &Frame, list: &List<'_>, c: &Counter<'_>) -> String {
    let (keep, kept) = newest(&list.lines, frame.room / 4, c);
    let folded = Folded::of(list, list.entries.len() - keep);
    let label = c
        .text("- Earlier iterations 0000000000–0000000000: \n")
        .tokens;
    let mut rolling_room = folded.room(frame.room, kept + label, c);
    let lines = &list.lines[folded.count..];
    let mut text = String::new();
    for _ in 0..16 {
        text = frame.render(folded.entry(rolling_room, c).as_ref(), lines);
        let n = c.text(&text).tokens;
        if n <= frame.limit {
            return text;
        }
        rolling_room = rolling_room.saturating_sub(n - frame.limit);
    }
    // Not reached in practice; the bound holds whatever happens.
    let count = |s: &str| c.text(s).tokens;
    fit(&text, Size::Tokens(frame.limit, &count), How::End)
}

/// How many of the newest `lines` take at most `share` tokens (at least
/// one stays, whatever its size), and the tokens they take.
fn newest(lines: &[(u64, String)], share: usize, c: &Counter<'_>) -> (usize, usize) {
    let (mut keep, mut kept) = (0, 0);
    for (it, l) in lines.iter().rev() {
        let n = c.text(&format!("- Iteration {it}: {l}\n")).tokens;
        if keep > 0 && kept + n > share {
            break;
        }
        keep += 1;
        kept += n;
    }
    (keep, kept)
}

/// What a re-fold puts in the rolling entry: the old rolling entry's
/// fragments, then the `count` oldest entries' whole texts, and the
/// iterations `first` to `last` they cover (none when nothing is folded).
struct Folded {
    frags: Vec<Fragment>,
    count: usize,
    first: Option<u64>,
    last: Option<u64>,
}

impl Folded {
    /// The old rolling entry and the `count` oldest entries of `list`.
    fn of(list: &List<'_>, count: usize) -> Folded {
        let (rolling, entries) = (list.rolling, list.entries);
        let mut frags: Vec<Fragment> = rolling
            .map(|r| fold::fragments(&r.text, r.first))
            .unwrap_or_default();
        frags.extend(
            entries[..count]
                .iter()
                .zip(&list.full)
                .map(|(e, whole)| Fragment {
                    iteration: e.iteration,
                    text: whole.clone(),
                }),
        );
        let first = rolling
            .map(|r| r.first)
            .or(entries.first().map(|e| e.iteration));
        let last = match count {
            0 => rolling.map(|r| r.last),
            n => Some(entries[n - 1].iteration),
        };
        Folded {
            frags,
            count,
            first,
            last,
        }
    }

    /// The rolling entry's room in the list's `room` beside the `taken`
    /// tokens of the kept entries and its label. A quarter of the room is
    /// left free for the next rounds to append, unless that would leave a
    /// folded iteration's text out entirely: then the rolling entry takes
    /// all it can (and the next round re-folds).
    fn room(&self, room: usize, taken: usize, c: &Counter<'_>) -> usize {
        let all = room.saturating_sub(taken);
        let three_quarters = (room * 3 / 4).saturating_sub(taken);
        match fold::rolling(&self.frags, three_quarters, c) {
            (_, true) => all,
            _ => three_quarters,
        }
    }

    /// The rolling entry in `room` tokens.
    fn entry(&self, room: usize, c: &Counter<'_>) -> Option<Rolling> {
        self.first.zip(self.last).map(|(first, last)| Rolling {
            first,
            last,
            text: fold::rolling(&self.frags, room, c).0,
        })
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
        let kept: Vec<u64> = text
            .lines()
            .filter_map(|l| {
                l.strip_prefix("- Iteration ")?
                    .split_once(':')?
                    .0
                    .parse()
                    .ok()
            })
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
