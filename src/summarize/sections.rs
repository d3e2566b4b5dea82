//! The heuristic summary's structure: capped, de-duplicated lists in a fixed
//! order, rendered as Markdown that can be parsed back.
//!
//! Parsing back is what lets a new summary extend an old one: the old lists
//! are merged with the new items and capped again, so repeated compaction
//! keeps the size bounded instead of summarizing a summary of a summary.

use std::collections::{HashMap, HashSet};
use std::fmt::Write;

/// A list that keeps first-seen order, drops duplicates, and remembers how
/// many items were left out when it was capped.
#[derive(Debug, Clone, Default)]
pub struct List {
    pub items: Vec<String>,
    pub more: usize,
    /// Every item ever pushed, so de-duplication stays linear on long spans.
    seen: HashSet<String>,
    /// The commands list only: each command's plain form (`` `cmd` ``) →
    /// its index in `items`, so finding or marking a command with its exit
    /// status is a lookup, not a scan (thousands of distinct failing
    /// commands would make that quadratic).
    commands: HashMap<String, usize>,
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
        if !item.is_empty() && self.seen.insert(item.clone()) {
            self.items.push(item);
        }
    }

    /// Whether the command `plain` (`` `cmd` ``) is listed, marked or not.
    pub fn has_command(&self, plain: &str) -> bool {
        self.commands.contains_key(plain)
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
        match self.commands.get(plain) {
            Some(&i) => {
                self.seen.insert(marked.clone());
                self.items[i] = marked;
            }
            None => {
                self.commands.insert(plain.to_string(), self.items.len());
                self.seen.insert(marked.clone());
                self.items.push(marked);
            }
        }
    }

    /// Keeps the newest `cap` items (or the first and the newest `cap - 1`
    /// when `keep_first`: a thread's first request is its task).
    pub fn cap(&mut self, cap: usize, keep_first: bool) {
        if self.items.len() <= cap {
            return;
        }
        let drop = self.items.len() - cap;
        let from = usize::from(keep_first && cap > 0);
        self.items.drain(from..from + drop);
        self.more += drop;
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

    /// `newer` after `self`; an item in both moves to its newer place.
    fn merge(&mut self, newer: List) {
        self.more = self.more.saturating_add(newer.more);
        let again: HashSet<&String> = newer
            .items
            .iter()
            .filter(|i| self.seen.contains(*i))
            .collect();
        if !again.is_empty() {
            self.items.retain(|i| !again.contains(i));
        }
        let commands = !self.commands.is_empty() || !newer.commands.is_empty();
        for item in newer.items {
            self.seen.insert(item.clone());
            self.items.push(item);
        }
        if commands {
            self.reindex();
        }
    }
}

/// Counted tool names in order of first use, with an index by name so
/// thousands of distinct tools are counted in linear time.
#[derive(Debug, Clone, Default)]
pub struct Tally(pub Vec<(String, usize)>, HashMap<String, usize>);

impl PartialEq for Tally {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}

impl Tally {
    pub fn add(&mut self, name: &str, n: usize) {
        if self.1.len() != self.0.len() {
            // Entries were added to the list directly: index them again.
            self.1 = self
                .0
                .iter()
                .enumerate()
                .map(|(i, (k, _))| (k.clone(), i))
                .collect();
        }
        match self.1.get(name) {
            Some(&i) => self.0[i].1 = self.0[i].1.saturating_add(n),
            None => {
                self.1.insert(name.to_string(), self.0.len());
                self.0.push((name.to_string(), n));
            }
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sections {
    /// A previous summary that was not in this format (an LLM's), kept as text.
    pub earlier: Option<String>,
    pub requests: List,
    pub tools: Tally,
    pub files: List,
    pub commands: List,
    pub errors: List,
    pub decisions: List,
    pub state: Option<String>,
}

const EARLIER: &str = "Earlier context";
const REQUESTS: &str = "User requests and instructions";
const TOOLS: &str = "Tools used";
const FILES: &str = "Files referenced";
const COMMANDS: &str = "Commands run";
const ERRORS: &str = "Errors seen";
const DECISIONS: &str = "Decisions";
const STATE: &str = "Latest state";

/// Per-section caps; [`Sections::shrink`] lowers them to fit a token budget.
#[derive(Debug, Clone, Copy)]
pub struct Caps {
    pub requests: usize,
    pub files: usize,
    pub commands: usize,
    pub errors: usize,
    pub decisions: usize,
    /// Longest quote, error line or state, in characters.
    pub text: usize,
}

impl Default for Caps {
    fn default() -> Self {
        Self {
            requests: 40,
            files: 150,
            commands: 40,
            errors: 30,
            decisions: 12,
            text: 300,
        }
    }
}

impl Caps {
    /// These caps, lowered to what `s` holds, so scaling bites at once.
    pub fn fitted(self, s: &Sections) -> Self {
        Self {
            requests: self.requests.min(s.requests.items.len()),
            files: self.files.min(s.files.items.len()),
            commands: self.commands.min(s.commands.items.len()),
            errors: self.errors.min(s.errors.items.len()),
            decisions: self.decisions.min(s.decisions.items.len()),
            text: self.text,
        }
    }

    /// The caps scaled by `f` (at least one item, 40 characters), each
    /// section at its own pace: decisions and texts go first, then the
    /// oldest files; commands, errors and the user's own words go last.
    pub fn scaled(self, f: f64) -> Self {
        let by = |n: usize, e: f64| ((n as f64 * f.powf(e)).ceil() as usize).max(1);
        Self {
            requests: by(self.requests, 0.1),
            files: by(self.files, 1.0),
            commands: by(self.commands, 0.1),
            errors: by(self.errors, 0.1),
            decisions: by(self.decisions, 1.5),
            text: by(self.text, 1.0).max(40),
        }
    }
}

/// Cuts `s` to at most `max` characters, marking the cut.
pub fn clip(s: &str, max: usize) -> String {
    let s = s.trim();
    if s.chars().count() <= max {
        return s.to_string();
    }
    let cut: String = s.chars().take(max.saturating_sub(1)).collect();
    format!("{}…", cut.trim_end())
}

fn write_list(out: &mut String, title: &str, l: &List) {
    if l.items.is_empty() && l.more == 0 {
        return;
    }
    let _ = writeln!(out, "### {title}");
    for item in &l.items {
        let _ = writeln!(out, "- {item}");
    }
    if l.more > 0 {
        let _ = writeln!(out, "- (… {} more left out)", l.more);
    }
}

impl Sections {
    /// `self` (older) extended with `newer`.
    pub fn merge(mut self, newer: Sections) -> Sections {
        self.earlier = self.earlier.or(newer.earlier);
        self.requests.merge(newer.requests);
        for (name, n) in newer.tools.0 {
            self.tools.add(&name, n);
        }
        self.files.merge(newer.files);
        self.commands.merge(newer.commands);
        self.errors.merge(newer.errors);
        self.decisions.merge(newer.decisions);
        self.state = newer.state.or(self.state);
        self
    }

    /// Applies `caps` to every list and text.
    pub fn apply(&mut self, caps: Caps) {
        self.requests.cap(caps.requests, true);
        self.files.cap(caps.files, false);
        self.commands.cap(caps.commands, false);
        self.errors.cap(caps.errors, false);
        self.decisions.cap(caps.decisions, false);
        // The user's words, error lines and commands are cut last.
        let ident = caps.text.max(160);
        for (list, max) in [
            (&mut self.requests, caps.text.max(240)),
            (&mut self.decisions, caps.text),
            (&mut self.errors, ident),
            (&mut self.commands, ident),
        ] {
            for item in &mut list.items {
                *item = clip(item, max);
            }
        }
        self.state = self.state.as_deref().map(|s| clip(s, caps.text * 2));
        self.earlier = self.earlier.as_deref().map(|s| clip(s, caps.text * 4));
    }

    pub fn render(&self) -> String {
        let mut out = String::new();
        let list = write_list;
        if let Some(e) = &self.earlier {
            list(&mut out, EARLIER, &{
                let mut l = List::default();
                l.push(e.clone());
                l
            });
        }
        list(&mut out, REQUESTS, &self.requests);
        if !self.tools.0.is_empty() {
            let tools: Vec<String> = self
                .tools
                .0
                .iter()
                .map(|(k, n)| format!("{k} ×{n}"))
                .collect();
            let _ = writeln!(out, "### {TOOLS}\n{}", tools.join(", "));
        }
        // Paths go on one line, comma-separated: a dash and a newline per
        // path would cost a sixth of the section.
        if !self.files.items.is_empty() || self.files.more > 0 {
            let _ = writeln!(out, "### {FILES}\n{}", self.files.items.join(", "));
            if self.files.more > 0 {
                let _ = writeln!(out, "- (… {} more left out)", self.files.more);
            }
        }
        list(&mut out, COMMANDS, &self.commands);
        list(&mut out, ERRORS, &self.errors);
        list(&mut out, DECISIONS, &self.decisions);
        if let Some(state) = &self.state {
            let _ = writeln!(out, "### {STATE}\n{state}");
        }
        out.trim_end().to_string()
    }

    /// Parses a rendered summary back. Text in another shape (an LLM's
    /// summary) becomes `earlier`.
    pub fn parse(text: &str) -> Sections {
        let mut s = Sections::default();
        if !text.trim_start().starts_with("### ") {
            s.earlier = Some(text.trim().to_string()).filter(|t| !t.is_empty());
            return s;
        }
        let mut current = "";
        let mut state = Vec::new();
        for line in text.lines() {
            if let Some(h) = line.strip_prefix("### ") {
                current = match h.trim() {
                    EARLIER => EARLIER,
                    REQUESTS => REQUESTS,
                    TOOLS => TOOLS,
                    FILES => FILES,
                    COMMANDS => COMMANDS,
                    ERRORS => ERRORS,
                    DECISIONS => DECISIONS,
                    STATE => STATE,
                    _ => "",
                };
                continue;
            }
            if current == STATE {
                state.push(line);
                continue;
            }
            let Some(item) = line.strip_prefix("- ") else {
                match current {
                    FILES => line.split(", ").for_each(|p| s.files.push(p.trim())),
                    TOOLS => line
                        .split(", ")
                        .filter_map(|t| t.rsplit_once(" ×"))
                        .for_each(|(name, n)| s.tools.add(name, n.parse().unwrap_or(1))),
                    _ => {}
                }
                continue;
            };
            if let Some(n) = item
                .strip_prefix("(… ")
                .and_then(|r| r.strip_suffix(" more left out)"))
            {
                let n: usize = n.parse().unwrap_or(0);
                match current {
                    REQUESTS => s.requests.more = s.requests.more.saturating_add(n),
                    FILES => s.files.more = s.files.more.saturating_add(n),
                    COMMANDS => s.commands.more = s.commands.more.saturating_add(n),
                    ERRORS => s.errors.more = s.errors.more.saturating_add(n),
                    DECISIONS => s.decisions.more = s.decisions.more.saturating_add(n),
                    _ => {}
                }
                continue;
            }
            match current {
                EARLIER => s.earlier = Some(item.to_string()),
                REQUESTS => s.requests.push(item),
                FILES => s.files.push(item),
                COMMANDS => s.commands.push(item),
                ERRORS => s.errors.push(item),
                DECISIONS => s.decisions.push(item),
                TOOLS => {
                    if let Some((name, n)) = item.rsplit_once(" ×") {
                        s.tools.add(name, n.parse().unwrap_or(1));
                    }
                }
                _ => {}
            }
        }
        s.state = Some(state.join("\n").trim().to_string()).filter(|t| !t.is_empty());
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Sections {
        let mut s = Sections::default();
        s.requests.push("\"fix the build\"");
        s.tools.add("read_file", 3);
        s.files.push("src/a.rs");
        s.files.push("src/b.rs");
        s.commands.push("`cargo test` (exit status 101)");
        s.errors.push("error[E0308]: mismatched types");
        s.state = Some("Tests pass now.\nNext: docs.".into());
        s
    }

    #[test]
    fn render_parse_round_trip() {
        let s = sample();
        assert_eq!(Sections::parse(&s.render()), s);
    }

    #[test]
    fn caps_count_what_they_leave_out_and_survive_a_round_trip() {
        let mut s = sample();
        for i in 0..10 {
            s.files.push(format!("src/f{i}.rs"));
        }
        s.apply(Caps {
            files: 4,
            ..Caps::default()
        });
        assert_eq!(
            s.files.items,
            ["src/f6.rs", "src/f7.rs", "src/f8.rs", "src/f9.rs"]
        );
        assert_eq!(s.files.more, 8);
        assert_eq!(Sections::parse(&s.render()).files.more, 8);
    }

    #[test]
    fn merging_keeps_order_dedupes_and_sums_tools() {
        let mut newer = Sections::default();
        newer.files.push("src/a.rs");
        newer.files.push("src/c.rs");
        newer.tools.add("read_file", 2);
        newer.tools.add("grep", 1);
        let m = sample().merge(newer);
        assert_eq!(m.files.items, ["src/b.rs", "src/a.rs", "src/c.rs"]);
        assert_eq!(
            m.tools.0,
            [("read_file".to_string(), 5), ("grep".to_string(), 1)]
        );
        assert_eq!(m.state.as_deref(), Some("Tests pass now.\nNext: docs."));
    }

    #[test]
    fn foreign_text_is_kept_as_earlier_context() {
        let s = Sections::parse("The user wants X. We did Y.");
        assert_eq!(s.earlier.as_deref(), Some("The user wants X. We did Y."));
        assert_eq!(clip("abcdef", 4), "abc…");
    }
}
