//! The rolling entry (`Earlier iterations A–B: …`): the oldest iterations
//! folded into one run of fragments, `[N] <what iteration N said>`, rather
//! than dropped. Too long, they are shrunk one rule at a time, spread over
//! the range; user requests, error lines and decisions go last, whole until
//! only clipping them fits ([`render`]), which a closing [`NOTE`] then says.

use std::collections::HashSet;

use super::fragment::{CLIPPED, Fragment, GONE, NOTE, items, render, sentences};
use crate::tokens::Counter;

/// Folded fragments, rendered at every level once, to be fitted to a room.
pub(super) struct Fold {
    rendered: Vec<[String; GONE + 1]>,
    /// Tokens of each fragment at each level, and one for the space between.
    sizes: Vec<[usize; GONE + 1]>,
    note: usize,
}

impl Fold {
    pub fn new(frags: &[Fragment], c: &Counter<'_>) -> Fold {
        // Items a newer fragment says again: once is enough when shrunk.
        let mut said: HashSet<&str> = HashSet::new();
        let mut again: Vec<HashSet<&str>> = vec![HashSet::new(); frags.len()];
        for (f, frag) in frags.iter().enumerate().rev() {
            let items: Vec<&str> = sentences(&frag.text)
                .into_iter()
                .filter_map(|(_, s)| items(s))
                .flat_map(|(_, _, items)| items)
                .collect();
            for item in &items {
                if said.contains(item) {
                    again[f].insert(item);
                }
            }
            said.extend(items);
        }
        let rendered: Vec<[String; GONE + 1]> = frags
            .iter()
            .zip(&again)
            .map(|(f, again)| std::array::from_fn(|level| render(f, level, again)))
            .collect();
        let size = |s: &String| match s.is_empty() {
            true => 0,
            false => c.text(s).tokens + 1,
        };
        let sizes = rendered.iter().map(|r| r.each_ref().map(size)).collect();
        Fold {
            rendered,
            sizes,
            note: c.text(NOTE).tokens + 1,
        }
    }

    /// Tokens the fragments take with every one at `level` (a room that
    /// holds them keeps each fragment at `level` or below).
    pub fn at(&self, level: usize) -> usize {
        self.first(self.sizes.len(), level)
    }

    /// [`Fold::at`] of the first `n` fragments only.
    pub fn first(&self, n: usize, level: usize) -> usize {
        self.sizes.iter().take(n).map(|s| s[level.min(GONE)]).sum()
    }

    /// The rolling text in `room` tokens, and the most any fragment was shrunk.
    pub fn text(&self, room: usize) -> (String, usize) {
        let level = self.levels(room);
        let most = level.iter().copied().max().unwrap_or(0);
        // A clipped request is said, in the note's room.
        let (level, most) = match most >= CLIPPED {
            true => {
                let level = self.levels(room.saturating_sub(self.note));
                let most = level.iter().copied().max().unwrap_or(0);
                (level, most)
            }
            false => (level, most),
        };
        let mut kept: Vec<&str> = self
            .rendered
            .iter()
            .zip(&level)
            .map(|(r, &l)| r[l].as_str())
            .filter(|s| !s.is_empty())
            .collect();
        if most >= CLIPPED && room >= self.note {
            kept.push(NOTE);
        }
        (kept.join(" "), most)
    }

    /// Each fragment's level: the rules applied in turn, each spread over the range.
    fn levels(&self, room: usize) -> Vec<usize> {
        let sizes = &self.sizes;
        let mut level = vec![0; sizes.len()];
        let mut total: usize = sizes.iter().map(|s| s[0]).sum();
        let order = spread(sizes.len());
        'rules: for l in 1..=GONE {
            for &f in &order {
                if total <= room {
                    break 'rules;
                }
                total = total - sizes[f][level[f]] + sizes[f][l];
                level[f] = l;
            }
        }
        level
    }
}

/// The rolling text of `frags` in `room` tokens, and whether some fragment was left out.
#[cfg(test)]
fn rolling(frags: &[Fragment], room: usize, c: &Counter<'_>) -> (String, bool) {
    let (text, most) = Fold::new(frags, c).text(room);
    (text, most >= GONE)
}

/// `0..n` bit-reversed (oldest, middle, quarters, …): a rule takes evenly from the range.
fn spread(n: usize) -> Vec<usize> {
    let bits = n.next_power_of_two().trailing_zeros();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&i| match bits {
        0 => 0,
        b => i.reverse_bits() >> (usize::BITS - b),
    });
    order
}

#[cfg(test)]
mod tests {
    use super::super::fragment::tests::FACTS;
    use super::super::fragment::{WHOLE, fragments};
    use super::*;
    use crate::tokens::{CountSpec, Encoders, Method, ModelRegistry};

    fn counter() -> Counter<'static> {
        let models = ModelRegistry::embedded();
        CountSpec::resolve(&models, "gpt-4o", None, None, Method::Bpe).counter(Encoders::global())
    }

    #[test]
    fn clipped_requests_are_said_and_read_back() {
        let c = counter();
        let frags: Vec<Fragment> = (1..=30)
            .map(|i| Fragment {
                iteration: i,
                text: format!("The user asked \"Fix bug {i} {}\".", "now ".repeat(30)),
            })
            .collect();
        let fold = Fold::new(&frags, &c);
        assert!(fold.at(WHOLE) > fold.at(CLIPPED));
        let (text, most) = fold.text(fold.at(CLIPPED) + 40);
        assert_eq!(most, CLIPPED, "{text}");
        assert!(text.ends_with(NOTE), "{text}");
        assert!(c.text(&text).tokens <= fold.at(CLIPPED) + 40, "{text}");
        let back = fragments(&text, 1);
        assert_eq!(back.len(), 30);
        assert!(!back[29].text.contains(NOTE));
        let (text, most) = fold.text(fold.at(WHOLE));
        assert!(most <= WHOLE && !text.contains(NOTE), "{text}");
    }

    #[test]
    fn rules_are_applied_evenly_over_the_range() {
        assert_eq!(spread(5), [0, 4, 2, 1, 3]);
        assert_eq!(spread(1), [0]);
        assert!(spread(0).is_empty());
        let mut all = spread(1000);
        all.sort_unstable();
        assert!(all.into_iter().eq(0..1000));
    }

    #[test]
    fn the_rolling_text_shrinks_evenly_and_keeps_its_room() {
        let c = counter();
        let frags: Vec<Fragment> = (1..=30)
            .map(|i| Fragment {
                iteration: i,
                // Items of their own: none is said again by a newer one.
                text: FACTS
                    .replace("Fix the build.", &format!("Fix bug {i}."))
                    .replace("linker", &format!("linker{i}"))
                    .replace("`ls`", &format!("`ls {i}`"))
                    .replace("cargo build", &format!("cargo build {i}"))
                    .replace("main.rs", &format!("main{i}.rs")),
            })
            .collect();
        let whole = rolling(&frags, usize::MAX, &c).0;
        assert_eq!(fragments(&whole, 1), frags);
        for room in [900, 400, 120, 10, 0] {
            let text = rolling(&frags, room, &c).0;
            assert!(c.text(&text).tokens <= room, "{room}: {text}");
            // What is left out is spread over the range: each half keeps
            // about as many fragments as the other (the bit-reversed order
            // halves 0..32, so 16 of the 30 are in its first half).
            let kept: Vec<u64> = (1..=30)
                .filter(|i| text.contains(&format!("[{i}] ")))
                .collect();
            let first = kept.iter().filter(|&&i| i <= 15).count();
            assert!(first.abs_diff(kept.len() - first) <= 2, "{room}: {text}");
        }
        // The whole does not fit 1,200 tokens; the requests, failing
        // commands and errors of all thirty do.
        assert!(c.text(&whole).tokens > 1200);
        let text = rolling(&frags, 1200, &c).0;
        assert!(!text.contains("Files: "), "{text}");
        for i in 1..=30 {
            assert!(text.contains(&format!("\"Fix bug {i}.\"")), "{text}");
        }
    }
}
