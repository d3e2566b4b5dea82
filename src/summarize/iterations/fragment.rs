//! One folded iteration of the rolling entry (`[N] <what iteration N
//! said>`): how it reads back from the rolling text, and how it shrinks,
//! level by level, the facts' sentences going last (see `fold`).

use std::collections::HashSet;

use crate::summarize::anchors::MENTIONED;
use crate::summarize::fit::{How, Size, fit};

/// Openings of the facts' sentences, by rank: kept last, longer, the first to
/// go (`asked ` is a shrunk fragment's request).
const FIRST: [&str; 5] = [
    "The user asked ",
    "asked ",
    "Errors: ",
    "Decisions: ",
    "Failing commands: ",
];
const SECOND: [&str; 2] = ["Commands run: ", MENTIONED];
const THIRD: [&str; 4] = [
    "The agent used ",
    "Files: ",
    "It ended with: ",
    "It produced no output",
];

/// Sentences of items, and what joins their items: an item a newer
/// fragment says again is said once when shrunk (decisions are sentences).
const LISTS: [(&str, &str); 8] = [
    ("The user asked ", "; "),
    ("asked ", "; "),
    ("Errors: ", "; "),
    ("Decisions: ", " "),
    ("Failing commands: ", "; "),
    ("Commands run: ", "; "),
    ("Files: ", ", "),
    (MENTIONED, "; "),
];

/// The level that drops the paths (`Files: `), the anchors' largest kind
/// but the longest to write: after the filler, before the commands.
const NO_FILES: usize = 2;
/// The last level that keeps failing commands, each said once.
pub(super) const ONCE: usize = 3;
/// The last level at which every request, error line and decision is whole.
pub(super) const WHOLE: usize = 4;
/// The level at which requests are clipped (to 60 characters).
pub(super) const CLIPPED: usize = 6;
/// How far a fragment is shrunk: 0 is its whole text, `GONE` none of it.
pub(super) const GONE: usize = 7;

/// Closes a rolling text whose requests are clipped: the bound cannot hold them whole.
pub(super) const NOTE: &str =
    "(Some requests here are clipped: the size bound does not hold them whole.)";

/// One folded iteration in the rolling text.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Fragment {
    pub iteration: u64,
    pub text: String,
}

/// The fragments of a rolling text (text before the first label is `first`'s).
pub(super) fn fragments(text: &str, first: u64) -> Vec<Fragment> {
    let text = text.trim();
    let text = text.strip_suffix(NOTE).unwrap_or(text).trim_end();
    let mut starts: Vec<(usize, usize, u64)> = Vec::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while let Some(off) = text[i..].find('[') {
        let at = i + off;
        let digits = bytes[at + 1..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        let close = at + 1 + digits;
        // A label opens the text or follows a fragment's end (a false one only splits it).
        let boundary = at == 0 || text[..at].ends_with(". ") || text[..at].ends_with("… ");
        if boundary
            && digits > 0
            && digits < 20
            && text[close..].starts_with("] ")
            && let Ok(n) = text[at + 1..close].parse::<u64>()
        {
            starts.push((at, close + 2, n));
        }
        i = at + 1;
    }
    let mut out = Vec::new();
    let lead = starts.first().map_or(text.len(), |s| s.0);
    if !text[..lead].trim().is_empty() {
        out.push(Fragment {
            iteration: first,
            text: text[..lead].trim().to_string(),
        });
    }
    for (k, &(_, body, n)) in starts.iter().enumerate() {
        let end = starts.get(k + 1).map_or(text.len(), |s| s.0);
        out.push(Fragment {
            iteration: n,
            text: text[body..end].trim().to_string(),
        });
    }
    out
}

/// `[N] text` shrunk to `level`: 1 drops the filler (tools, the last
/// word) and says each listed item once (`again`: items a newer fragment
/// says); [`NO_FILES`] drops the paths; [`ONCE`] keeps only requests,
/// errors, decisions and failing commands; [`WHOLE`] drops the failing
/// commands; 5 keeps the requests, whole; [`CLIPPED`] clips them to 60
/// characters; `GONE` nothing.
pub(super) fn render(f: &Fragment, level: usize, again: &HashSet<&str>) -> String {
    let text = match level {
        0 => f.text.clone(),
        GONE.. => String::new(),
        _ => sentences(&f.text)
            .into_iter()
            .filter_map(|(rank, s)| shrunk(rank, s, level, again))
            .collect::<Vec<_>>()
            .join(" "),
    };
    if text.is_empty() {
        return text;
    }
    format!("[{}] {text}", f.iteration)
}

/// Sentence `s` (of `rank`) at `level` (1 or more), if that level keeps it.
fn shrunk(rank: u8, s: &str, level: usize, again: &HashSet<&str>) -> Option<String> {
    let keep = match level {
        1 => rank <= 1 || s.starts_with("Files: "),
        NO_FILES => rank <= 1,
        _ => rank == 0,
    };
    if !keep {
        return None;
    }
    let Some((opening, sep, items)) = items(s) else {
        return Some(s.to_string());
    };
    let asked = opening == FIRST[0] || opening == FIRST[1];
    let failing = opening == FIRST[4];
    if (level > WHOLE && !asked) || (level == WHOLE && failing) {
        return None;
    }
    let opening = if level > WHOLE { "asked " } else { opening };
    let max = match level {
        CLIPPED.. => 60,
        _ => usize::MAX,
    };
    let items: Vec<String> = items
        .into_iter()
        .filter(|i| !again.contains(i))
        .map(|i| fit(i, Size::Chars(max), How::End))
        .collect();
    match (items.is_empty(), sep) {
        (true, _) => None,
        // Decisions are sentences, each with its full stop.
        (false, " ") => Some(format!("{opening}{}", items.join(sep))),
        (false, _) => Some(format!("{opening}{}.", items.join(sep))),
    }
}

/// A fragment's sentences and their rank (0 kept longest; a model's are 1).
pub(super) fn sentences(text: &str) -> Vec<(u8, &str)> {
    let rank_of = |s: &str| -> Option<u8> {
        [&FIRST[..], &SECOND[..], &THIRD[..]]
            .iter()
            .position(|group| group.iter().any(|p| s.starts_with(p)))
            .map(|r| r as u8)
    };
    let mut cuts: Vec<usize> = vec![0];
    for (at, _) in text.match_indices(". ") {
        let next = at + 2;
        if rank_of(&text[next..]).is_some() {
            cuts.push(next);
        }
    }
    cuts.push(text.len());
    cuts.windows(2)
        .map(|w| {
            let s = text[w[0]..w[1]].trim();
            let rank = rank_of(s).unwrap_or(if s.contains(" of agent work.") { 2 } else { 1 });
            (rank, s)
        })
        .filter(|(_, s)| !s.is_empty())
        .collect()
}

/// A sentence of items (`Errors: a; b.`, see [`LISTS`]) as its opening,
/// what joins its items, and its items.
pub(super) fn items(sentence: &str) -> Option<(&'static str, &'static str, Vec<&str>)> {
    let &(opening, sep) = LISTS.iter().find(|(o, _)| sentence.starts_with(o))?;
    let body = &sentence[opening.len()..];
    let items = match sep {
        " " => body.split_inclusive(". ").map(str::trim).collect(),
        _ => body.trim_end_matches('.').split(sep).collect::<Vec<_>>(),
    };
    Some((
        opening,
        sep,
        items.into_iter().filter(|i| !i.is_empty()).collect(),
    ))
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    pub(in crate::summarize::iterations) const FACTS: &str = "The user asked \"Fix the build.\". Failing commands: `cargo build` (exit status 1). Errors: error: linker failed. The agent used shell ×2. Commands run: `ls`. Files: src/main.rs. Decisions: I'll keep the linker flags rather than pin the toolchain. It ended with: Done.";

    #[test]
    fn fragments_read_back_as_written() {
        let text = "[3] The user asked \"a [1] b\". [12] Errors: x.";
        assert_eq!(
            fragments(text, 3),
            [
                Fragment {
                    iteration: 3,
                    text: "The user asked \"a [1] b\".".into()
                },
                Fragment {
                    iteration: 12,
                    text: "Errors: x.".into()
                }
            ]
        );
        assert_eq!(fragments("Free text.", 7)[0].iteration, 7);
    }

    #[test]
    fn the_requests_errors_and_decisions_go_last() {
        let none = HashSet::new();
        let f = Fragment {
            iteration: 4,
            text: FACTS.into(),
        };
        assert_eq!(render(&f, 0, &none), format!("[4] {FACTS}"));
        assert_eq!(
            render(&f, 1, &none),
            "[4] The user asked \"Fix the build.\". Failing commands: `cargo build` (exit status 1). Errors: error: linker failed. Commands run: `ls`. Files: src/main.rs. Decisions: I'll keep the linker flags rather than pin the toolchain."
        );
        assert_eq!(
            render(&f, NO_FILES, &none),
            "[4] The user asked \"Fix the build.\". Failing commands: `cargo build` (exit status 1). Errors: error: linker failed. Commands run: `ls`. Decisions: I'll keep the linker flags rather than pin the toolchain."
        );
        assert_eq!(
            render(&f, ONCE, &none),
            "[4] The user asked \"Fix the build.\". Failing commands: `cargo build` (exit status 1). Errors: error: linker failed. Decisions: I'll keep the linker flags rather than pin the toolchain."
        );
        assert_eq!(
            render(&f, WHOLE, &none),
            "[4] The user asked \"Fix the build.\". Errors: error: linker failed. Decisions: I'll keep the linker flags rather than pin the toolchain."
        );
        assert_eq!(
            render(&f, WHOLE + 1, &none),
            "[4] asked \"Fix the build.\"."
        );
        let again = HashSet::from([
            "`cargo build` (exit status 1)",
            "src/main.rs",
            "I'll keep the linker flags rather than pin the toolchain.",
        ]);
        assert_eq!(
            render(&f, ONCE, &again),
            "[4] The user asked \"Fix the build.\". Errors: error: linker failed."
        );
        // Said by a newer fragment, an item is said once from the first rule on.
        assert_eq!(
            render(&f, 1, &again),
            "[4] The user asked \"Fix the build.\". Errors: error: linker failed. Commands run: `ls`."
        );
        let long = Fragment {
            iteration: 5,
            text: format!("The user asked \"{}\".", "Port it. ".repeat(20).trim()),
        };
        assert!(render(&long, WHOLE + 1, &none).ends_with("Port it.\"."));
        assert!(render(&long, CLIPPED, &none).ends_with("…."));
        assert_eq!(render(&f, GONE, &none), "");
        let story = Fragment {
            iteration: 5,
            text: "The agent fixed the linker.".into(),
        };
        assert_eq!(render(&story, 1, &none), "[5] The agent fixed the linker.");
        assert_eq!(
            render(&story, NO_FILES, &none),
            "[5] The agent fixed the linker."
        );
        assert_eq!(render(&story, ONCE, &none), "");
    }
}
