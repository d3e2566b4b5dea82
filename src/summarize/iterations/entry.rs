//! One iteration's entry: its parts and its repair, an `Also mentioned: a; b.`
//! sentence of the anchors it misses, written with it so it extends byte for byte.

use super::facts::{Facts, one_line};
use crate::summarize::anchors::{Anchors, Forms, MENTIONED};
use crate::summarize::fit::{How, Size, fit, largest};
use crate::summarize::sections::Caps;
use crate::tokens::Counter;

pub(super) struct Entry {
    pub iteration: u64,
    pub parts: Vec<Piece>,
    /// The anchors of its new messages (none for a previous injection's entry).
    pub anchors: Option<Anchors>,
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
}

impl Entry {
    /// A previous injection's entry, kept as written.
    pub fn written(iteration: u64, text: String) -> Self {
        Self {
            iteration,
            parts: vec![Piece::Text(text)],
            anchors: None,
        }
    }

    /// An entry of the span being summarized (not a previous injection's).
    pub fn is_new(&self) -> bool {
        self.anchors.is_some()
    }

    /// The whole entry, its repair included, on one line.
    pub fn full(&self) -> String {
        let text = join(self.parts.iter().map(Piece::full));
        self.repaired(text, usize::MAX, None)
    }

    /// The entry in at most `cap` tokens (`whole` is [`Entry::full`]).
    pub fn fitted(&self, whole: &str, cap: usize, c: &Counter<'_>) -> String {
        if c.text(whole).tokens <= cap {
            return whole.to_string();
        }
        let Some(anchors) = &self.anchors else {
            return self.parts_in(cap, c);
        };
        // The parts cut to the cap and the list in what is left, or the list
        // up to half of it: whichever holds more anchors.
        let first = self.parts_in(cap, c);
        let want = c
            .text(&mentioned(&missing(anchors, &first), usize::MAX))
            .tokens;
        let second = self.parts_in(cap.saturating_sub(want.min(cap / 2)), c);
        let [first, second] = [first, second].map(|text| {
            let room = cap.saturating_sub(c.text(&text).tokens + 1);
            self.repaired(text, room, Some(c))
        });
        let held = |t: &str| anchors.items.len() - missing(anchors, t).len();
        match held(&second) > held(&first) {
            true => second,
            false => first,
        }
    }

    /// `text` and a [`MENTIONED`] sentence in `room` tokens (unbounded without `c`).
    fn repaired(&self, text: String, room: usize, c: Option<&Counter<'_>>) -> String {
        let Some(anchors) = &self.anchors else {
            return text;
        };
        let items = missing(anchors, &text);
        let fits = |n| c.is_none_or(|c| c.text(&mentioned(&items, n)).tokens <= room);
        match largest(items.len(), fits) {
            0 => text,
            n => join([text, mentioned(&items, n)]),
        }
    }

    /// The parts cut to `cap` tokens together, shared max-min fair.
    fn parts_in(&self, cap: usize, c: &Counter<'_>) -> String {
        let full: Vec<String> = self.parts.iter().map(Piece::full).collect();
        let sizes: Vec<usize> = full.iter().map(|p| c.text(p).tokens).collect();
        if sizes.iter().sum::<usize>() + sizes.len() <= cap {
            return join(full);
        }
        let inner = share(&sizes, cap);
        let count = |s: &str| c.text(s).tokens;
        let fitted = |p: &Piece| match p {
            Piece::Facts(f) => Caps::default().fit(inner, &count, 0.9, |caps| f.render(caps)),
            Piece::Text(t) => fit(&one_line(t), Size::Tokens(inner, &count), How::End),
        };
        join(
            self.parts
                .iter()
                .zip(full)
                .zip(&sizes)
                .map(|((p, whole), &n)| if n <= inner { whole } else { fitted(p) }),
        )
    }
}

/// The anchors' items `text` does not hold, most important first.
fn missing(anchors: &Anchors, text: &str) -> Vec<String> {
    let forms = Forms::of(text);
    anchors
        .items
        .iter()
        .filter(|a| !forms.holds(a))
        .map(|a| a.item.clone())
        .collect()
}

/// The first `n` of `items` as a [`MENTIONED`] sentence.
fn mentioned(items: &[String], n: usize) -> String {
    let n = n.min(items.len());
    let more = match items.len() - n {
        0 => String::new(),
        k => format!(" (and {k} more)"),
    };
    one_line(&format!("{MENTIONED}{}{more}.", items[..n].join("; ")))
}

fn join(parts: impl IntoIterator<Item = String>) -> String {
    let parts: Vec<String> = parts.into_iter().filter(|p| !p.is_empty()).collect();
    one_line(&parts.join(" "))
}

/// The largest cap such that `sizes`, each cut to it, add up to at most `room`.
fn share(sizes: &[usize], room: usize) -> usize {
    let hi = sizes.iter().copied().max().unwrap_or(0);
    largest(hi, |cap| {
        sizes.iter().map(|&s| s.min(cap)).sum::<usize>() <= room
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_share_is_max_min_fair() {
        assert_eq!(share(&[10, 100, 100], 110), 50);
        assert_eq!(share(&[10, 20], 1000), 20);
        assert_eq!(share(&[], 5), 0);
    }
}
