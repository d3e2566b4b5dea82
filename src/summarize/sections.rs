//! The heuristic summary's structure: capped, de-duplicated lists rendered as
//! Markdown that parses back ([`text`]), so a new summary extends an old one.

mod apply;
mod list;
#[cfg(test)]
mod round_trip_tests;
mod text;

pub use list::{List, Tally};

use super::fit::{How, Size, fit};

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
}

#[cfg(test)]
mod tests;
