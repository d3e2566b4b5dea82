//! The re-fold: when the appended list passes the limit, the oldest
//! entries go into the rolling entry (see [`bound`](super::bound) for why
//! it keeps a quarter of the room free).

use super::bound::{Frame, List, Rolling, clip_tokens};
use super::fold::{self, Fragment};
use crate::tokens::Counter;

/// The list re-folded to fit the limit: the newest entries that take at
/// most a quarter of the room (at least one) stay; the others join the
/// rolling entry, which gets what room is left.
pub(super) fn refold(frame: &Frame, list: &List<'_>, c: &Counter<'_>) -> String {
    let (keep, kept) = newest(&list.lines, frame.room / 4, c);
    let folded = Folded::of(list, list.entries.len() - keep);
    let label = c
        .text("- Earlier iterations 0000000000–0000000000: \n")
        .tokens;
    let rolling_room = folded.room(frame.room, kept + label, c);
    fit(frame, &folded, &list.lines[folded.count..], rolling_room, c)
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

/// The re-folded list in the frame's limit. Tokens of parts do not add up
/// exactly to those of the whole: what came out over the limit is taken
/// off the rolling entry's room, and it is tried again.
fn fit(
    frame: &Frame,
    folded: &Folded,
    lines: &[(u64, String)],
    mut rolling_room: usize,
    c: &Counter<'_>,
) -> String {
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
    clip_tokens(&text, frame.limit, c)
}
