//! The placeholder of a cleared tool result: rendered from the template and
//! recognized again, so clearing is idempotent.

use crate::thread::thousands;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Literal(String),
    Tool,
    Chars,
}

/// A parsed template: literal text, `{tool}` and `{chars}`.
#[derive(Debug, Clone)]
pub(super) struct Template(Vec<Piece>);

impl Template {
    pub fn new(template: &str) -> Self {
        let mut pieces = Vec::new();
        let mut literal = String::new();
        let mut rest = template;
        while let Some(c) = rest.chars().next() {
            let (piece, len) = if rest.starts_with("{tool}") {
                (Some(Piece::Tool), 6)
            } else if rest.starts_with("{chars}") {
                (Some(Piece::Chars), 7)
            } else {
                literal.push(c);
                (None, c.len_utf8())
            };
            if let Some(p) = piece {
                if !literal.is_empty() {
                    pieces.push(Piece::Literal(std::mem::take(&mut literal)));
                }
                pieces.push(p);
            }
            rest = &rest[len..];
        }
        if !literal.is_empty() {
            pieces.push(Piece::Literal(literal));
        }
        Self(pieces)
    }

    /// The placeholder of a result of `tool` that had `chars` characters.
    /// Substituted in one pass: a tool name holding `{chars}` stays as it is.
    pub fn render(&self, tool: &str, chars: usize) -> String {
        let mut out = String::new();
        for p in &self.0 {
            match p {
                Piece::Literal(s) => out.push_str(s),
                Piece::Tool => out.push_str(tool),
                Piece::Chars => out.push_str(&thousands(chars as u64)),
            }
        }
        out
    }

    /// Whether `text` is this template rendered for `tool` (any count).
    pub fn matches(&self, text: &str, tool: &str) -> bool {
        // Anything longer than a rendering can be is a tool's real output.
        let longest: usize = self
            .0
            .iter()
            .map(|p| match p {
                Piece::Literal(s) => s.len(),
                Piece::Tool => tool.len(),
                Piece::Chars => MAX_COUNT,
            })
            .sum();
        let mut search = Search {
            pieces: &self.0,
            text,
            tool,
            failed: Default::default(),
        };
        text.len() <= longest && search.from(0, 0)
    }
}

/// The longest count a rendering holds: `usize::MAX` with its commas.
const MAX_COUNT: usize = 26;

/// Matching a rendering, trying each length of each `{chars}` run. Each
/// (piece, offset) is tried once: never an exponential search.
struct Search<'a> {
    pieces: &'a [Piece],
    text: &'a str,
    tool: &'a str,
    failed: std::collections::HashSet<(usize, usize)>,
}

impl Search<'_> {
    /// Whether `pieces[piece..]` match `text[at..]`.
    fn from(&mut self, piece: usize, at: usize) -> bool {
        let Some(first) = self.pieces.get(piece) else {
            return at == self.text.len();
        };
        if self.failed.contains(&(piece, at)) {
            return false;
        }
        let rest = &self.text[at..];
        let found = match first {
            Piece::Literal(s) => rest.starts_with(s.as_str()) && self.from(piece + 1, at + s.len()),
            Piece::Tool => {
                rest.starts_with(self.tool) && self.from(piece + 1, at + self.tool.len())
            }
            Piece::Chars => {
                let run = rest
                    .bytes()
                    .take(MAX_COUNT)
                    .take_while(|b| b.is_ascii_digit() || *b == b',')
                    .count();
                rest.as_bytes().first().is_some_and(u8::is_ascii_digit)
                    && (1..=run).any(|n| self.from(piece + 1, at + n))
            }
        };
        if !found {
            self.failed.insert((piece, at));
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::DEFAULT_PLACEHOLDER;

    #[test]
    fn renders_and_recognizes_its_own_output() {
        let t = Template::new(DEFAULT_PLACEHOLDER);
        let s = t.render("read_file", 12_345);
        assert_eq!(
            s,
            "[condense cleared this read_file result: 12,345 characters]"
        );
        assert!(t.matches(&s, "read_file"));
        assert!(!t.matches(&s, "bash"), "another tool's placeholder");
        assert!(!t.matches(
            "[condense cleared this read_file result: many characters]",
            "read_file"
        ));
        assert!(!t.matches("some output", "read_file"));
    }

    #[test]
    fn custom_templates_with_digits_and_braces() {
        let t = Template::new("{chars}0 gone from {tool} {x}");
        let s = t.render("a{chars}b", 7);
        assert_eq!(s, "70 gone from a{chars}b {x}");
        assert!(t.matches(&s, "a{chars}b"));
        let plain = Template::new("cleared");
        assert!(plain.matches(&plain.render("t", 9), "t"));
    }

    #[test]
    fn many_counts_against_a_run_of_digits_is_a_small_search() {
        // Backtracking over every split of the digits would never end.
        let t = Template::new(&("{chars}".repeat(140) + "x"));
        let digits = "1".repeat(140 * MAX_COUNT);
        assert!(!t.matches(&digits, "t"));
        assert!(t.matches(&t.render("t", 1), "t"));
        // A tool's real output is longer than any rendering: not one.
        assert!(!Template::new("{chars}").matches(&"9".repeat(MAX_COUNT + 1), "t"));
    }
}
