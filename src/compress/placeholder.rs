//! The placeholder that replaces a cleared tool result: rendered from the
//! `clear.placeholder` template, and recognized again, so a result cleared
//! by an earlier request is never cleared twice (clearing is idempotent).

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
        matches_from(&self.0, text, tool)
    }
}

/// Backtracking over the length of each `{chars}` run, so a literal that
/// starts with a digit after `{chars}` still matches.
fn matches_from(pieces: &[Piece], text: &str, tool: &str) -> bool {
    let Some((first, rest)) = pieces.split_first() else {
        return text.is_empty();
    };
    match first {
        Piece::Literal(s) => text
            .strip_prefix(s.as_str())
            .is_some_and(|t| matches_from(rest, t, tool)),
        Piece::Tool => text
            .strip_prefix(tool)
            .is_some_and(|t| matches_from(rest, t, tool)),
        Piece::Chars => {
            let run = text
                .bytes()
                .take_while(|b| b.is_ascii_digit() || *b == b',')
                .count();
            (1..=run).any(|n| {
                text.as_bytes()[0].is_ascii_digit() && matches_from(rest, &text[n..], tool)
            })
        }
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
}
