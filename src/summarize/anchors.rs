//! Anchors: what an agent cannot re-derive once a span is gone, found the
//! same way every time so `receipt` can check a summary. Paths, commands
//! and errors come from the heuristic's own extraction, so the two agree.
//! Patterns run on `regex` (linear on hostile input); each kind is capped.

use std::collections::HashSet;

use serde_json::Value;

use super::extract::extract;
use super::fit::{How, Size, fit};
use super::pattern::Pattern;
use super::sections::{Caps, Sections};
use crate::thread::{Message, Part, Role};

/// Longest item shown for an anchor in a repaired summary, in characters.
pub const ITEM_CHARS: usize = 160;

/// `text` as an anchor's item shows it: at most [`ITEM_CHARS`].
fn shown(text: &str) -> String {
    fit(text, Size::Chars(ITEM_CHARS), How::End)
}

/// How much of a long text a summary must hold: its first this many
/// [`significant`] characters, enough to tell one request from another and
/// few enough that a clipped quote still holds it.
pub const SIGNIFICANT_CHARS: usize = 48;

/// Most anchors per kind, most important first; beyond its cap the newest
/// are kept (and a thread's first request, its task).
const KINDS: [(Kind, usize); 11] = [
    (Kind::Request, 24),
    (Kind::Instruction, 16),
    (Kind::Error, 16),
    (Kind::FailedCommand, 16),
    (Kind::Path, 40),
    (Kind::Command, 16),
    (Kind::Url, 8),
    (Kind::Identifier, 16),
    (Kind::Date, 6),
    (Kind::Number, 12),
    (Kind::Name, 8),
];

/// The most anchors a span has (the sum of the caps of [`KINDS`]).
pub const MAX_ANCHORS: usize = 178;

/// What an anchor is, in the order a repair adds them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// A user message (its opening words).
    Request,
    /// A sentence of a user message that sets a rule ([`RULE`]).
    Instruction,
    Error,
    /// A command whose output ended with a non-zero exit status.
    FailedCommand,
    Path,
    Command,
    Url,
    /// Backticked text, `snake_case`, `camelCase`, `a::path`, hashes, ….
    Identifier,
    Date,
    /// Numbers of two or more digits and versions (`0.13.5`).
    Number,
    /// Capitalized words in the middle of a user's sentence.
    Name,
}

/// One anchor: its repair line, and what a text must contain to hold it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Anchor {
    pub kind: Kind,
    /// The line a repair adds (`- {item}`); it always holds the anchor.
    pub item: String,
    /// What must be found in the text, normalized (see [`Needle`]).
    pub needles: Vec<Needle>,
}

/// A normalized piece of text a summary must contain.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Needle {
    /// Found in the text's [`significant`] form (prose: requests, rules, errors).
    Significant(String),
    /// Found in the text's [`folded`] form (paths, commands, URLs).
    Folded(String),
    /// Found in the [`folded`] form as a whole word: `42` is not in `1425`.
    Word(String),
}

/// A span's anchors, most important first, and how many the caps left out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Anchors {
    pub items: Vec<Anchor>,
    pub left_out: usize,
}

static URL: Pattern = Pattern::new(r#"https?://[^\s<>"'`()\[\]{}]+"#);
static BACKTICKED: Pattern = Pattern::new(r"`([^`\n]{2,80})`");
/// Words with a `_`, a `::`, an inner capital, or all capitals and digits.
static IDENTIFIER: Pattern = Pattern::new(concat!(
    r"\b(?:[A-Za-z][A-Za-z0-9]*(?:::[A-Za-z_][A-Za-z0-9_]*)+",
    r"|[A-Za-z0-9]*_[A-Za-z0-9_]*[A-Za-z0-9]",
    r"|[a-z]+[A-Z][A-Za-z0-9]*",
    r"|[A-Z][A-Z0-9]*[0-9][A-Z0-9]*|[A-Z]{2,}[0-9]+",
    r"|[0-9a-f]*[0-9][0-9a-f]*[a-f][0-9a-f]*)\b"
));
static DATE: Pattern = Pattern::new(r"\b(?:\d{4}-\d{2}-\d{2}|\d{1,2}/\d{1,2}/\d{2,4})\b");
/// A number not inside a word (`E0599`) or another number; `v1.2` counts.
static NUMBER: Pattern = Pattern::new(r"(?:^|[^0-9.A-Za-z_]|\bv)(\d+(?:\.\d+)+|\d{2,})\b");
/// A capitalized word after a lower-case word or a comma: not a sentence's first.
static NAME: Pattern = Pattern::new(r"[a-z,] +([A-Z][a-z][A-Za-z0-9]+)");
static RULE: Pattern =
    Pattern::new(r"(?i)\b(?:always|never|don't|do not|must|make sure|avoid|only)\b");

/// Words too common to be names.
const NOT_NAMES: [&str; 12] = [
    "The", "This", "That", "Then", "There", "These", "When", "What", "Please", "Thanks", "Also",
    "And",
];

/// The opening of a per-iteration entry's repair.
pub(super) const MENTIONED: &str = "Also mentioned: ";

/// A text in the forms anchors are looked up in.
#[derive(Default)]
pub(super) struct Forms {
    folded: String,
    significant: String,
}

impl Forms {
    pub(super) fn of(text: &str) -> Self {
        Self {
            folded: folded(text),
            significant: significant(text),
        }
    }

    /// Appends `more` after white space (both forms are word by word).
    pub(super) fn extend(&mut self, more: &str) {
        let folded = folded(more);
        if !self.folded.is_empty() && !folded.is_empty() {
            self.folded.push(' ');
        }
        self.folded.push_str(&folded);
        self.significant.push_str(&significant(more));
    }

    pub(super) fn holds(&self, a: &Anchor) -> bool {
        a.needles.iter().all(|n| match n {
            Needle::Significant(s) => self.significant.contains(s.as_str()),
            Needle::Folded(s) => self.folded.contains(s.as_str()),
            Needle::Word(s) => holds_word(&self.folded, s),
        })
    }
}

/// `needle` in `hay` with no letter or digit right before or after it.
fn holds_word(hay: &str, needle: &str) -> bool {
    hay.match_indices(needle).any(|(at, _)| {
        let before = hay[..at].chars().next_back();
        let after = hay[at + needle.len()..].chars().next();
        !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
    })
}

/// The anchors of `span` (canonical messages).
pub fn anchors(span: &[Message]) -> Anchors {
    extracted(span, &extract(span, Caps::default().text))
}

/// The anchors of `span` from the heuristic's extraction `s` (its errors,
/// commands and files, which no text cap shortens).
pub fn extracted(span: &[Message], s: &Sections) -> Anchors {
    let mut found = Found::default();
    for e in &s.errors.items {
        found.add(Kind::Error, shown(e), vec![prose(e)]);
    }
    for c in &s.commands.items {
        // `cmd`, or `cmd` (exit status N): the exit status must be kept too.
        let (cmd, status) = match c.rsplit_once(" (exit status ") {
            Some((cmd, rest)) => (cmd, rest.strip_suffix(')')),
            None => (c.as_str(), None),
        };
        let cmd = cmd.trim_matches('`');
        let mut needles = vec![Needle::Folded(prefix(&folded(cmd), SIGNIFICANT_CHARS))];
        let kind = match status {
            Some(code) => {
                needles.push(Needle::Word(code.to_string()));
                Kind::FailedCommand
            }
            None => Kind::Command,
        };
        let item = match status {
            Some(code) => format!("`{}` (exit status {code})", shown(cmd)),
            None => format!("`{}`", shown(cmd)),
        };
        found.add(kind, item, needles);
    }
    for p in &s.files.items {
        found.add(Kind::Path, p.clone(), vec![Needle::Folded(folded(p))]);
    }
    for m in span {
        for part in &m.parts {
            match (m.role, part) {
                (Role::User, Part::Text(t)) => {
                    user_text(&mut found, t);
                    said(&mut found, t);
                }
                (Role::Assistant, Part::Text(t)) => said(&mut found, t),
                (_, Part::ToolCall(c)) => called(&mut found, &c.arguments),
                _ => {}
            }
        }
    }
    found.finish()
}

/// A user message: the request, its rules, the names it uses.
fn user_text(found: &mut Found, text: &str) {
    if significant(text).is_empty() {
        return;
    }
    found.add(
        Kind::Request,
        format!("\"{}\"", shown(text)),
        vec![prose(text)],
    );
    for sentence in sentences(text) {
        if RULE.get().is_match(sentence) {
            let item = format!("\"{}\"", shown(sentence));
            found.add(Kind::Instruction, item, vec![prose(sentence)]);
        }
    }
    for c in NAME.get().captures_iter(text) {
        let name = &c[1];
        if !NOT_NAMES.contains(&name) {
            found.add(Kind::Name, name.to_string(), vec![word(name)]);
        }
    }
}

/// What either side wrote: URLs, identifiers, dates, numbers.
fn said(found: &mut Found, text: &str) {
    urls(found, text);
    for c in BACKTICKED.get().captures_iter(text) {
        let id = c[1].trim();
        found.add(Kind::Identifier, format!("`{id}`"), vec![word(id)]);
    }
    for m in IDENTIFIER.get().find_iter(text) {
        found.add(
            Kind::Identifier,
            m.as_str().to_string(),
            vec![word(m.as_str())],
        );
    }
    let mut dates = Vec::new();
    for m in DATE.get().find_iter(text) {
        found.add(Kind::Date, m.as_str().to_string(), vec![word(m.as_str())]);
        dates.push(m.range());
    }
    for c in NUMBER.get().captures_iter(text) {
        let Some(m) = c.get(1) else { continue };
        // The parts of a date are the date's.
        if !dates.iter().any(|d| d.contains(&m.start())) {
            found.add(Kind::Number, m.as_str().to_string(), vec![word(m.as_str())]);
        }
    }
}

/// The URLs a tool call's arguments give, read from their decoded string
/// values (the JSON text's `\n` and `\"` are not part of a URL): the one-line
/// values only, such as a URL to fetch or a command line. A value of several
/// lines is a text the call puts somewhere (a file's body, an edit's new
/// text): the file keeps it and its path is an anchor, and a tool's output
/// (the same file read back) is not read for anchors either; its licence
/// headers and manifest links would ask a summary for boilerplate.
/// Arguments that are not JSON are one value.
fn called(found: &mut Found, arguments: &str) {
    fn each(found: &mut Found, v: &Value) {
        match v {
            Value::String(s) if !s.contains('\n') => urls(found, s),
            Value::Array(xs) => xs.iter().for_each(|x| each(found, x)),
            Value::Object(m) => m.values().for_each(|x| each(found, x)),
            _ => {}
        }
    }
    match serde_json::from_str::<Value>(arguments) {
        Ok(v) => each(found, &v),
        Err(_) => each(found, &Value::String(arguments.to_string())),
    }
}

fn urls(found: &mut Found, text: &str) {
    for m in URL.get().find_iter(text) {
        let url = m.as_str().trim_end_matches(['.', ',', ';', ':', '!', '?']);
        found.add(
            Kind::Url,
            url.to_string(),
            vec![Needle::Folded(folded(url))],
        );
    }
}

/// `text` lower-cased, with each run of white space one space.
pub fn folded(text: &str) -> String {
    let lower = |w: &str| w.chars().flat_map(char::to_lowercase).collect::<String>();
    text.split_whitespace()
        .map(lower)
        .collect::<Vec<_>>()
        .join(" ")
}

/// `text`'s letters and digits, lower-cased: what survives re-wrapping,
/// quoting and punctuation.
pub fn significant(text: &str) -> String {
    text.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

fn prefix(s: &str, chars: usize) -> String {
    s.chars().take(chars).collect()
}

fn prose(text: &str) -> Needle {
    Needle::Significant(prefix(&significant(text), SIGNIFICANT_CHARS))
}

fn word(text: &str) -> Needle {
    Needle::Word(folded(text))
}

/// `text` cut after each `.`, `!` or `?` followed by white space, and at line ends.
fn sentences(text: &str) -> impl Iterator<Item = &str> {
    text.lines().flat_map(|line| {
        let mut starts = vec![0];
        let b = line.as_bytes();
        for i in 0..b.len().saturating_sub(1) {
            if matches!(b[i], b'.' | b'!' | b'?') && b[i + 1].is_ascii_whitespace() {
                starts.push(i + 1);
            }
        }
        starts.push(line.len());
        starts
            .windows(2)
            .map(|w| line[w[0]..w[1]].trim())
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
    })
}

/// Anchors as found, by kind, de-duplicated on what they require.
#[derive(Default)]
struct Found {
    by_kind: [Vec<Anchor>; KINDS.len()],
    seen: HashSet<Vec<Needle>>,
}

impl Found {
    fn add(&mut self, kind: Kind, item: String, needles: Vec<Needle>) {
        let empty = needles.iter().any(|n| match n {
            Needle::Significant(s) | Needle::Folded(s) | Needle::Word(s) => s.is_empty(),
        });
        if empty || !self.seen.insert(needles.clone()) {
            return;
        }
        self.by_kind[kind as usize].push(Anchor {
            kind,
            item,
            needles,
        });
    }

    fn finish(self) -> Anchors {
        let mut out = Anchors::default();
        for (mut list, (kind, cap)) in self.by_kind.into_iter().zip(KINDS) {
            if list.len() > cap {
                let keep_first = usize::from(kind == Kind::Request && cap > 1);
                let drop = list.len() - cap;
                list.drain(keep_first..keep_first + drop);
                out.left_out += drop;
            }
            out.items.extend(list);
        }
        out
    }
}

#[cfg(test)]
#[path = "anchors_tests.rs"]
pub(crate) mod tests;
