//! The injection under the summary's limit: every old iteration stays, as
//! its own entry or folded into the rolling entry ([`fold`](super::fold)).
//! A list written afresh, or re-folded, leaves room for [`ROUNDS`] more
//! rounds; new entries are then appended byte for byte, each cut to a
//! share of the room left free, so a provider's prompt cache keeps hitting.
//! Only past the limit is the list re-folded.

use super::entry::Entry;
use super::fold::Fold;
use super::fragment::{self, Fragment};
use crate::summarize::fit::{How, Size, fit};
use crate::tokens::Counter;

/// The line that opens the list of iterations in an injection.
pub(in crate::summarize) const HEADER: &str = "Earlier iterations:";

/// The rolling entry's label.
pub(super) const ROLLING: &str = "Earlier iterations ";

/// Rounds of one new iteration each that a list leaves room for, appended
/// byte for byte before a re-fold.
pub(super) const ROUNDS: usize = 20;

/// Fewest tokens an entry of a list written afresh is cut to.
const MIN_SHARE: usize = 40;

/// Tokens an appended entry's content is given in the reserve, at its least.
const APPENDED: usize = MIN_APPENDED;

/// Fewest tokens an entry appended to a list is cut to.
const MIN_APPENDED: usize = 16;

/// Tokens of an entry's line besides its content (`- Iteration 1234: `, the newline).
const LINE: usize = 8;

/// The rolling entry: iterations `first` to `last`, folded.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Rolling {
    pub first: u64,
    pub last: u64,
    pub text: String,
}

/// Tokens a list written afresh leaves free of `room`: [`ROUNDS`] appended
/// entries, at least a quarter and at most half of it.
fn reserve(room: usize) -> usize {
    (room / 4).max((room / 2).min(ROUNDS * (APPENDED + LINE)))
}

/// `head` (a previous plain summary, at most a quarter of `limit`), then the
/// list: `left_out`, `rolling`, `entries`; in at most `limit` tokens.
pub(super) fn injection(
    head: Option<&str>,
    left_out: usize,
    rolling: Option<&Rolling>,
    entries: &[Entry],
    limit: usize,
    c: &Counter<'_>,
) -> String {
    let count = |s: &str| c.text(s).tokens;
    let head = head
        .map(|h| fit(h, Size::Tokens(limit / 4, &count), How::End))
        .filter(|h| !h.is_empty());
    let list = |rolling: Option<&Rolling>, lines: &[(u64, String)]| {
        render(head.as_deref(), left_out, rolling, lines)
    };
    let room = limit.saturating_sub(count(&list(None, &[])));
    let reserve = reserve(room);
    // Each new entry cut to its share; a re-fold reads the whole text instead.
    let full: Vec<String> = entries.iter().map(Entry::full).collect();
    let written: Vec<(u64, String)> = entries
        .iter()
        .zip(&full)
        .filter(|(e, _)| !e.is_new())
        .map(|(e, whole)| (e.iteration, whole.clone()))
        .collect();
    // Appended to a list: a `ROUNDS`th of the room it leaves free, so that
    // many rounds append (each takes a twentieth of what is left: they never
    // add up to it, but for the least entry); afresh: the list's share.
    let appends = rolling.is_some() || !written.is_empty();
    let afresh = (room / 8).max(MIN_SHARE);
    let fill = room.saturating_sub(reserve);
    let cap = match appends {
        true => {
            let free = limit.saturating_sub(count(&list(rolling, &written)));
            (free / ROUNDS)
                .saturating_sub(LINE)
                .clamp(MIN_APPENDED, afresh)
        }
        // A few iterations share what the list may fill.
        false => (fill / entries.len().max(1)).max(afresh),
    };
    let lines: Vec<(u64, String)> = entries
        .iter()
        .zip(&full)
        .map(|(e, whole)| match e.is_new() {
            true => (e.iteration, e.fitted(whole, cap, c)),
            false => (e.iteration, whole.clone()),
        })
        .collect();
    let text = list(rolling, &lines);
    let fits = match appends {
        true => limit,
        false => limit.saturating_sub(reserve),
    };
    if count(&text) <= fits {
        return text;
    }
    // Re-folded into the room less the reserve: the newest entries within a
    // quarter of it stay, fewer when the rolling entry needs their room to
    // keep its requests, error lines, decisions and failing commands.
    let lines: Vec<(u64, String)> = entries
        .iter()
        .zip(lines)
        .map(|(e, (it, line))| match e.is_new() {
            true => (it, line),
            false => (it, e.fitted(&line, afresh, c)),
        })
        .collect();
    let mut frags: Vec<Fragment> = rolling
        .map(|r| fragment::fragments(&r.text, r.first))
        .unwrap_or_default();
    let before = frags.len();
    frags.extend(entries.iter().zip(&full).map(|(e, whole)| Fragment {
        iteration: e.iteration,
        text: whole.clone(),
    }));
    let label = count("- Earlier iterations 0000000000–0000000000: \n");
    let sizes: Vec<usize> = lines
        .iter()
        .map(|(it, l)| count(&format!("- Iteration {it}: {l}\n")))
        .collect();
    let kept = |keep: usize| -> usize { sizes[sizes.len() - keep..].iter().sum() };
    let mut keep = newest(&sizes, fill / 4);
    let all = Fold::new(&frags, c);
    let need = |keep: usize| all.first(before + entries.len() - keep, fragment::ONCE);
    while keep > 1 && kept(keep) + label + need(keep) > fill {
        keep -= 1;
    }
    let folded = entries.len() - keep;
    frags.truncate(before + folded);
    let first = rolling
        .map(|r| r.first)
        .or(entries.first().map(|e| e.iteration));
    let last = match folded {
        0 => rolling.map(|r| r.last),
        n => Some(entries[n - 1].iteration),
    };
    // The reserve stays free unless that would cost a request, an error
    // line, a decision or a failing command that the whole room holds.
    let fold = Fold::new(&frags, c);
    let taken = kept(keep) + label;
    let mut rolling_room = fill
        .saturating_sub(taken)
        .max(fold.at(fragment::ONCE))
        .min(room.saturating_sub(taken));
    // Tokens of parts do not add up to the whole's: any excess is taken off
    // the rolling entry, and tried again.
    let mut text = String::new();
    for _ in 0..16 {
        let entry = first.zip(last).map(|(first, last)| Rolling {
            first,
            last,
            text: fold.text(rolling_room).0,
        });
        text = list(entry.as_ref(), &lines[folded..]);
        let n = count(&text);
        if n <= limit {
            return text;
        }
        rolling_room = rolling_room.saturating_sub(n - limit);
    }
    // Not reached in practice; the bound holds whatever happens.
    fit(&text, Size::Tokens(limit, &count), How::End)
}

/// How many of the newest lines (of `sizes` tokens) fit `share` tokens (at least one).
fn newest(sizes: &[usize], share: usize) -> usize {
    let (mut keep, mut kept) = (0, 0);
    for &n in sizes.iter().rev() {
        if keep > 0 && kept + n > share {
            break;
        }
        keep += 1;
        kept += n;
    }
    keep
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::{CountSpec, Encoders, Method, ModelRegistry};

    fn counter() -> Counter<'static> {
        let models = ModelRegistry::embedded();
        CountSpec::resolve(&models, "gpt-4o", None, None, Method::Bpe).counter(Encoders::global())
    }

    /// A new entry (of the span being summarized).
    fn entry(iteration: u64, words: usize) -> Entry {
        Entry {
            anchors: Some(Default::default()),
            ..written(iteration, words)
        }
    }

    /// An entry of a previous injection.
    fn written(iteration: u64, words: usize) -> Entry {
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
    fn a_long_new_entry_is_cut_to_its_share() {
        let c = counter();
        // 800 tokens leave about 400 free; the two entries share the rest.
        let entries = [entry(1, 5), entry(2, 2000)];
        let text = injection(None, 0, None, &entries, 800, &c);
        assert!(c.text(&text).tokens <= 420, "{text}");
        let two = text.split("- Iteration 2: ").nth(1).unwrap();
        assert!(c.text(two).tokens <= 200, "{two}");
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
