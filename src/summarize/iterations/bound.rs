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

use super::entry::Entry;
use crate::summarize::fit::{How, Size, fit};
use crate::tokens::Counter;

/// The line that opens the list of iterations in an injection.
pub(super) const HEADER: &str = "Earlier iterations:";

/// The rolling entry: iterations `first` to `last`, folded.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Rolling {
    pub first: u64,
    pub last: u64,
    pub text: String,
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
    pub fn new(head: Option<&str>, left_out: usize, limit: usize, c: &Counter<'_>) -> Frame {
        let count = |s: &str| c.text(s).tokens;
        let head = head
            .map(|h| fit(h, Size::Tokens(limit / 4, &count), How::End))
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
    pub fn appended(
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
