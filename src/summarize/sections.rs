//! The heuristic summary's structure: capped, de-duplicated lists rendered as
//! Markdown that parses back ([`text`]), so a new summary extends an old one.

mod list;
#[cfg(test)]
mod round_trip_tests;
mod text;

pub use list::{List, Tally};

use super::fit::{How, Size, fit};
use super::salience::{sentences, telling_sentences};

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sections {
    /// A previous summary that was not in this format (an LLM's), kept as text.
    pub earlier: Option<String>,
    pub requests: List,
    pub tools: Tally,
    pub files: List,
    pub commands: List,
    pub errors: List,
    /// The assistant's sentences that state facts, decisions aside.
    pub stated: List,
    pub decisions: List,
    /// `### Also in the span`: the receipt's repair; kept when extending.
    pub also: List,
    /// Sections under headings this code does not write, kept verbatim.
    pub other: Vec<(String, String)>,
    pub state: Option<String>,
}

const EARLIER: &str = "Earlier context";
const REQUESTS: &str = "User requests and instructions";
const STATED: &str = "Stated by the assistant";
const TOOLS: &str = "Tools used";
const FILES: &str = "Files referenced";
const COMMANDS: &str = "Commands run";
const ERRORS: &str = "Errors seen";
const DECISIONS: &str = "Decisions";
const ALSO: &str = "Also in the span";
const STATE: &str = "Latest state";
/// Opens what an extension appended (the same sections, what the span since
/// said); read back into the sections before it.
pub(super) const SINCE: &str = "Since then";

/// Per-section caps; the heuristic scales them down to fit a token budget.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Caps {
    pub requests: usize,
    pub stated: usize,
    pub files: usize,
    pub commands: usize,
    pub errors: usize,
    pub decisions: usize,
    pub also: usize,
    /// Longest quote, statement, error line or state, in characters.
    pub text: usize,
}

impl Default for Caps {
    fn default() -> Self {
        Self {
            requests: 60,
            stated: 60,
            files: 150,
            commands: 40,
            errors: 30,
            decisions: 24,
            also: 60,
            text: 300,
        }
    }
}

impl Caps {
    /// These caps, lowered to what `s` holds, so scaling bites at once.
    pub fn fitted(self, s: &Sections) -> Self {
        Self {
            requests: self.requests.min(s.requests.items.len()),
            stated: self.stated.min(s.stated.items.len()),
            files: self.files.min(s.files.items.len()),
            commands: self.commands.min(s.commands.items.len()),
            errors: self.errors.min(s.errors.items.len()),
            decisions: self.decisions.min(s.decisions.items.len()),
            also: self.also.min(s.also.items.len()),
            text: self.text,
        }
    }

    /// The caps scaled by `f`, each at its own pace: the user's words,
    /// commands, errors and `also` go last.
    pub fn scaled(self, f: f64) -> Self {
        let by = |n: usize, e: f64| ((n as f64 * f.powf(e)).ceil() as usize).max(1);
        Self {
            requests: by(self.requests, 0.2),
            stated: by(self.stated, 0.3),
            files: by(self.files, 1.0),
            commands: by(self.commands, 0.1),
            errors: by(self.errors, 0.1),
            decisions: by(self.decisions, 1.0),
            also: by(self.also, 0.1),
            text: by(self.text, 1.0).max(40),
        }
    }

    /// The largest `render` at these caps scaled down (by at most `step` a
    /// try) that fits `max` tokens; then the text is cut.
    pub fn fit(
        self,
        max: usize,
        count: &dyn Fn(&str) -> usize,
        step: f64,
        render: impl Fn(Caps) -> String,
    ) -> String {
        let mut factor = 1.0_f64;
        let mut text = String::new();
        for _ in 0..48 {
            let caps = self.scaled(factor);
            text = render(caps);
            let n = count(&text);
            if n <= max {
                return text;
            }
            if caps == self.scaled(0.0) {
                break;
            }
            factor *= (max as f64 / n as f64).min(step);
        }
        fit(&text, Size::Tokens(max, count), How::End)
    }
}

/// The quote of a quoted item (`"…"`, `(system) "…"`): the text before it and
/// its inside; None when `item` is not quoted.
fn quoted(item: &str) -> Option<(&str, &str)> {
    match item.find('"') {
        Some(open) if item.len() > open + 1 && item.ends_with('"') => {
            Some((&item[..=open], &item[open + 1..item.len() - 1]))
        }
        _ => None,
    }
}

/// A quoted item with only its telling sentences inside the quotes (all of
/// it when none tells anything).
fn compact_quoted(item: &str) -> String {
    match quoted(item).and_then(|(lead, inner)| Some((lead, telling_sentences(inner)?))) {
        Some((lead, told)) => format!("{lead}{told}\""),
        None => item.to_string(),
    }
}

/// A quoted item (`"…"`, `(system) "…"`) condensed inside its quotes.
fn condense_quoted(item: &str, max: usize) -> String {
    if item.chars().count() <= max {
        return item.to_string();
    }
    match quoted(item) {
        Some((lead, inner)) => {
            format!(
                "{lead}{}\"",
                fit(
                    inner,
                    Size::Chars(max.saturating_sub(lead.len() + 1)),
                    How::Telling
                )
            )
        }
        _ => fit(item, Size::Chars(max), How::Telling),
    }
}

impl Sections {
    /// Whether nothing is said.
    pub fn is_empty(&self) -> bool {
        *self == Sections::default()
    }

    /// `self` (newer) without the items `older` says already: what an
    /// addendum to `older` needs to say.
    pub fn without(self, older: &Sections) -> Sections {
        let new = |l: List, old: &List| l.without(old);
        Sections {
            earlier: self.earlier.filter(|e| older.earlier.as_ref() != Some(e)),
            requests: new(self.requests, &older.requests),
            tools: self.tools,
            files: new(self.files, &older.files),
            commands: new(self.commands, &older.commands),
            errors: new(self.errors, &older.errors),
            stated: new(self.stated, &older.stated),
            decisions: new(self.decisions, &older.decisions),
            also: new(self.also, &older.also),
            other: self
                .other
                .into_iter()
                .filter(|o| !older.other.contains(o))
                .collect(),
            state: self.state.filter(|s| older.state.as_ref() != Some(s)),
        }
    }

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
        // An older latest state stays as a statement.
        if newer.state.is_some()
            && let Some(old) = self.state.take()
        {
            self.stated.push(old);
        }
        self.stated.merge(newer.stated);
        self.decisions.merge(newer.decisions);
        self.also.merge(newer.also);
        self.other.extend(newer.other);
        self.state = newer.state.or(self.state);
        self
    }

    /// Applies `caps` to every list and text.
    pub fn apply(&mut self, caps: Caps) {
        // More requests than fit: each is written compactly, its sentences
        // of small talk left out, so that more of them fit.
        if self.requests.items.len() > caps.requests {
            self.requests.compact(compact_quoted);
        }
        self.requests.cap(caps.requests, true);
        self.stated.cap(caps.stated, false);
        self.commands.cap(caps.commands, false);
        self.errors.cap(caps.errors, false);
        self.decisions.cap(caps.decisions, false);
        self.also.cap(caps.also, false);
        // The first request (the task) keeps twice as much.
        let ident = caps.text.max(160);
        let quote = caps.text.max(120);
        for (i, item) in self.requests.items.iter_mut().enumerate() {
            *item = condense_quoted(item, quote * if i == 0 { 2 } else { 1 });
        }
        for item in self
            .stated
            .items
            .iter_mut()
            .chain(&mut self.decisions.items)
        {
            *item = fit(item, Size::Chars(caps.text), How::Telling);
        }
        for list in [&mut self.errors, &mut self.commands, &mut self.also] {
            for item in &mut list.items {
                *item = fit(item, Size::Chars(ident), How::End);
            }
        }
        self.state = self
            .state
            .as_deref()
            .map(|s| fit(s, Size::Chars(caps.text * 2), How::Telling));
        // The latest state's sentences a kept decision or statement says
        // are not said twice (unless that is all it says).
        let listed = |t: &str| {
            let t = t.trim();
            self.decisions
                .items
                .iter()
                .chain(&self.stated.items)
                .any(|i| i.contains(t))
        };
        if let Some(state) = &self.state {
            let rest: Vec<&str> = sentences(state).filter(|t| !listed(t)).collect();
            if !rest.is_empty() && rest.len() < sentences(state).count() {
                self.state = Some(rest.concat().trim().to_string());
            }
        }
        // A path a kept request, command, error or statement says is not
        // listed again: its room goes to one said nowhere else.
        let said: Vec<&String> = [
            &self.requests,
            &self.commands,
            &self.errors,
            &self.stated,
            &self.decisions,
        ]
        .into_iter()
        .flat_map(|l| &l.items)
        .collect();
        self.files.retain(|f| !said.iter().any(|i| i.contains(f)));
        self.files.cap(caps.files, false);
        self.earlier = self
            .earlier
            .as_deref()
            .map(|s| fit(s, Size::Chars(caps.text * 4), How::Telling));
        for (_, body) in &mut self.other {
            *body = fit(body, Size::Chars(caps.text * 4), How::Telling);
        }
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
        // One of each stretch of three, the newest of it: spread over the span.
        assert_eq!(
            s.files.items,
            ["src/f0.rs", "src/f3.rs", "src/f6.rs", "src/f9.rs"]
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
    fn requests_over_their_cap_are_written_compactly() {
        let mut s = Sections::default();
        for r in [
            "\"Fix the build. Thanks!\"",
            "\"Hi Caroline! My sister Elena moved to Porto. How are you?\"",
            "\"Haha, totally. My sister Elena moved to Porto.\"",
            "\"ok\"",
        ] {
            s.requests.push(r);
        }
        s.apply(Caps {
            requests: 2,
            ..Caps::default()
        });
        // The task whole; the repeat gone; small talk left out.
        assert_eq!(
            s.requests.items,
            [
                "\"Fix the build. Thanks!\"",
                "\"My sister Elena moved to Porto.\""
            ]
        );
        assert_eq!(s.requests.more, 1);
    }

    #[test]
    fn foreign_text_is_kept_as_earlier_context() {
        let s = Sections::parse("The user wants X. We did Y.");
        assert_eq!(s.earlier.as_deref(), Some("The user wants X. We did Y."));
    }
}
