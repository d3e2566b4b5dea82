//! The lists a summary is made of, cut to their cap evenly over the whole
//! span, so coverage stays even however often it extends.

use std::collections::{HashMap, HashSet};

use super::super::salience::item_score;

/// A list in first-seen order, without duplicates, counting what caps left out.
#[derive(Debug, Clone, Default)]
pub struct List {
    pub items: Vec<String>,
    pub more: usize,
    /// Every item ever pushed, so de-duplication stays linear on long spans.
    seen: HashSet<String>,
    /// The commands list only: each plain `` `cmd` `` → its index in `items`.
    commands: HashMap<String, usize>,
    /// After [`List::merge`]: the leading items a previous summary gave, and
    /// how many items they stand for.
    older: Option<(usize, usize)>,
    /// Items only seen (a path in a tool's output), never acted on: the
    /// first a cap leaves out.
    seen_only: HashSet<String>,
}

/// Equal when they show the same items and count the same left out.
impl PartialEq for List {
    fn eq(&self, other: &Self) -> bool {
        self.items == other.items && self.more == other.more
    }
}

impl List {
    pub fn push(&mut self, item: impl Into<String>) {
        let item = item.into();
        self.seen_only.remove(&item);
        if !item.is_empty() && self.seen.insert(item.clone()) {
            self.items.push(item);
        }
    }

    /// These items but those `old` shows, and what they left out.
    pub fn without(self, old: &List) -> List {
        let mut out = List::default();
        for item in self.items.into_iter().filter(|i| !old.items.contains(i)) {
            match self.seen_only.contains(&item) {
                true => out.push_seen(&item),
                false => out.push(item),
            }
        }
        out.more = self.more;
        out
    }

    /// Lists `item` as only seen (see `seen_only`), unless it is listed.
    pub fn push_seen(&mut self, item: &str) {
        if !item.is_empty() && self.seen.insert(item.to_string()) {
            self.items.push(item.to_string());
            self.seen_only.insert(item.to_string());
        }
    }

    /// Lists the command `plain`, once.
    pub fn push_command(&mut self, plain: String) {
        if !self.commands.contains_key(&plain) {
            self.commands.insert(plain.clone(), self.items.len());
            self.items.push(plain.clone());
            self.seen.insert(plain);
        }
    }

    /// Shows the command `plain` as `marked` (with its exit status), in its
    /// place when it is listed, else at the end.
    pub fn mark_command(&mut self, plain: &str, marked: String) {
        self.seen.insert(marked.clone());
        match self.commands.get(plain) {
            Some(&i) => self.items[i] = marked,
            None => {
                self.commands.insert(plain.to_string(), self.items.len());
                self.items.push(marked);
            }
        }
    }

    /// Each item but the first (the task) rewritten by `short`; an item that
    /// then says what an earlier one says goes.
    pub fn compact(&mut self, short: impl Fn(&str) -> String) {
        let mut said = HashSet::new();
        let (mut i, mut gone_older) = (0, 0);
        let old = self.older.map_or(0, |(old, _)| old);
        self.items.retain_mut(|item| {
            if i > 0 {
                *item = short(item);
            }
            i += 1;
            let new = said.insert(item.clone());
            gone_older += usize::from(!new && i <= old);
            new
        });
        if let Some((old, _)) = &mut self.older {
            *old -= gone_older;
        }
        if !self.commands.is_empty() {
            self.reindex();
        }
    }

    /// Keeps the items `keep` holds to (neither left out nor counted:
    /// another part of the summary says them).
    pub fn retain(&mut self, keep: impl Fn(&str) -> bool) {
        let old = self.older.map_or(0, |(old, _)| old);
        let (mut i, mut gone_older) = (0, 0);
        self.items.retain(|item| {
            i += 1;
            let kept = keep(item);
            gone_older += usize::from(!kept && i <= old);
            kept
        });
        if let Some((old, _)) = &mut self.older {
            *old -= gone_older;
        }
        if !self.commands.is_empty() {
            self.reindex();
        }
    }

    /// Keeps `cap` items (and the first, the task, when `keep_first`): the
    /// most telling ([`item_score`]) of each of `cap` equal stretches of the span,
    /// an older summary's items weighted by what they stood for.
    pub fn cap(&mut self, cap: usize, keep_first: bool) {
        let n = self.items.len();
        if n <= cap {
            return;
        }
        let mut keep = vec![false; n];
        let mut left = cap;
        if keep_first && cap > 0 {
            keep[0] = true;
            left -= 1;
        }
        // What was only seen tells nothing beside what was acted on.
        let scores: Vec<u32> = self
            .items
            .iter()
            .map(|i| match self.seen_only.contains(i) {
                true => 0,
                false => item_score(i),
            })
            .collect();
        let (old, stands_for) = self.older.unwrap_or((0, 0));
        let old = old.min(n);
        let stands_for = stands_for.max(old) as f64;
        let at = |i: usize| -> f64 {
            if i < old {
                i as f64 * stands_for / old as f64
            } else {
                stands_for + (i - old) as f64
            }
        };
        let width = (stands_for + (n - old) as f64) / left.max(1) as f64;
        // The best item of each stretch.
        let mut best: Vec<Option<usize>> = vec![None; left];
        for i in 0..n {
            if keep[i] {
                continue;
            }
            let b = ((at(i) / width) as usize).min(left.saturating_sub(1));
            if let Some(slot) = best.get_mut(b)
                && slot.is_none_or(|j| scores[i] >= scores[j])
            {
                *slot = Some(i);
            }
        }
        // A stretch of small talk only gives its slot to the rest: a fact
        // said elsewhere is worth more than the filler of its stretch.
        let best: Vec<usize> = best.into_iter().flatten().collect();
        let scored = (0..n).filter(|&i| !keep[i] && scores[i] > 0).count();
        let mut spare = scored - best.iter().filter(|&&i| scores[i] > 0).count();
        for i in best {
            if scores[i] == 0 && spare > 0 {
                spare -= 1;
                continue;
            }
            keep[i] = true;
            left -= 1;
        }
        if left > 0 {
            // Empty stretches: their slots go to the best of the rest.
            let mut rest: Vec<(u32, usize)> = (0..n)
                .filter(|&i| !keep[i])
                .map(|i| (scores[i], i))
                .collect();
            let k = left.min(rest.len());
            if k > 0 {
                rest.select_nth_unstable_by(k - 1, |a, b| b.cmp(a));
                rest[..k].iter().for_each(|&(_, i)| keep[i] = true);
            }
        }
        let mut i = 0;
        self.items.retain(|_| {
            i += 1;
            keep[i - 1]
        });
        self.more += n - self.items.len();
        self.older = None;
        if !self.commands.is_empty() {
            self.reindex();
        }
    }

    /// The commands index after items moved.
    fn reindex(&mut self) {
        self.commands = self
            .items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                let plain = item.split(" (exit status").next().unwrap_or(item);
                (plain.to_string(), i)
            })
            .collect();
    }

    /// `newer` after `self` (a previous summary's list); an item in both
    /// moves to its newer place.
    pub(super) fn merge(&mut self, newer: List) {
        let stands_for = self.items.len().saturating_add(self.more);
        self.more = self.more.saturating_add(newer.more);
        let again: HashSet<&String> = newer
            .items
            .iter()
            .filter(|i| self.seen.contains(*i))
            .collect();
        if !again.is_empty() {
            self.items.retain(|i| !again.contains(i));
        }
        self.older = Some((self.items.len(), stands_for));
        let commands = !self.commands.is_empty() || !newer.commands.is_empty();
        for item in &newer.items {
            if !newer.seen_only.contains(item) {
                self.seen_only.remove(item);
            }
        }
        self.seen_only.extend(newer.seen_only);
        for item in newer.items {
            self.seen.insert(item.clone());
            self.items.push(item);
        }
        if commands {
            self.reindex();
        }
    }
}

/// Counted tool names in order of first use, indexed by name (linear time).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tally(pub Vec<(String, usize)>, HashMap<String, usize>);

impl Tally {
    pub fn add(&mut self, name: &str, n: usize) {
        match self.1.get(name) {
            Some(&i) => self.0[i].1 = self.0[i].1.saturating_add(n),
            None => {
                self.1.insert(name.to_string(), self.0.len());
                self.0.push((name.to_string(), n));
            }
        }
    }

    /// `name ×n` for each tool.
    pub fn shown(&self) -> Vec<String> {
        self.0.iter().map(|(k, n)| format!("{k} ×{n}")).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(items: &[&str]) -> List {
        let mut l = List::default();
        items.iter().for_each(|i| l.push(*i));
        l
    }

    #[test]
    fn a_cap_spreads_over_the_span_and_prefers_facts() {
        let mut l = list(&[
            "ok",
            "port 5433",
            "thanks",
            "sure",
            "ok then",
            "fine",
            "yes",
            "db-17 down",
        ]);
        l.cap(2, false);
        assert_eq!(l.items, ["port 5433", "db-17 down"]);
        assert_eq!(l.more, 6);
        let mut l = list(&["task", "a", "b", "c", "d", "e", "f"]);
        l.cap(3, true);
        assert_eq!(l.items, ["task", "c", "f"]);
    }

    #[test]
    fn a_stretch_of_small_talk_gives_its_slot_to_a_fact() {
        let mut l = list(&["port 5433", "db-17 down", "x 42", "ok", "sure", "fine"]);
        l.cap(2, false);
        assert_eq!(l.items, ["db-17 down", "x 42"]);
        assert_eq!(l.more, 4);
    }

    #[test]
    fn a_previous_summary_counts_for_what_it_stood_for() {
        // Two items kept of 100: the older half of the span.
        let mut older = list(&["old 1", "old 2"]);
        older.more = 98;
        older.merge(list(&[
            "new 1", "new 2", "new 3", "new 4", "new 5", "new 6", "new 7", "new 8",
        ]));
        older.cap(4, false);
        assert_eq!(
            older.items.iter().filter(|i| i.starts_with("old")).count(),
            2
        );
        // Without the weight it would keep one of eight new items per slot.
        let mut flat = list(&["old 1", "old 2", "new 1", "new 2", "new 3", "new 4"]);
        flat.cap(2, false);
        assert_eq!(flat.items, ["new 1", "new 4"]);
    }
}
