//! Everything the heuristic summary pulls out of a span; the caps decide later what fits.

use std::collections::HashMap;
use std::ops::Range;

use serde_json::Value;

use super::fit::{How, Size, fit};
use super::pattern::Pattern;
use super::salience::{facts, sentences, told};
use super::sections::Sections;
use crate::thread::{Message, Part, Role};

/// A path with a directory and an extension (not URLs or versions).
static PATH: Pattern = Pattern::new(
    r"(?:^|[^A-Za-z0-9_./+@:~-])(/?(?:[A-Za-z0-9_.+@-]+/)+[A-Za-z0-9_.+@-]*[A-Za-z0-9_+@-]\.[A-Za-z][A-Za-z0-9]{0,9})",
);

/// A kind of line, as read trimmed (`exact`), and what every such line
/// holds (`near`: mostly literals, found fast in a whole text); each
/// candidate is confirmed on its line.
struct Lines {
    exact: Pattern,
    near: Pattern,
}

/// Lines that report a failure.
static ERROR: Lines = Lines {
    exact: Pattern::new(concat!(
        r"^(?:error(?:\[E\d+\])?: |fatal: |thread '.*' panicked at|Traceback \(most recent call last\):",
        r"|[A-Za-z_][\w.]*(?:Error|Exception): \S|npm ERR! code|FAILED |ERROR: |Error: |Segmentation fault|panic: )"
    )),
    near: Pattern::new(
        "error|Error|ERROR|fatal: |panic|Traceback|Exception: |npm ERR!|FAILED |Segmentation fault",
    ),
};

/// Lines of tool output that point at a source location.
static LOCATION: Lines = Lines {
    exact: Pattern::new(r#"^(?:--> |File "|at )|panicked at |:[0-9]+:[0-9]+"#),
    near: Pattern::new(r#"--> |File "|at |:[0-9]+:[0-9]"#),
};

impl Lines {
    /// The lines of `text` of this kind, in order; each byte is read once
    /// however many candidates a line holds.
    fn find(&'static self, text: &str) -> Vec<Range<usize>> {
        let (near, exact) = (self.near.get(), self.exact.get());
        let mut lines = Vec::new();
        let mut at = 0;
        while let Some(m) = near.find_at(text, at) {
            let start = text[at..m.start()].rfind('\n').map_or(at, |i| at + i + 1);
            let end = text[m.end()..]
                .find('\n')
                .map_or(text.len(), |i| m.end() + i);
            if exact.is_match(text[start..end].trim()) {
                lines.push(start..end);
            }
            at = end + 1;
            if at > text.len() {
                break;
            }
        }
        lines
    }
}

static EXIT_STATUS: Pattern = Pattern::new(r"(?m)^exit (?:status|code):? ?(-?\d+)\s*$");

/// Sentences where the agent states a choice.
static DECISION: Pattern = Pattern::new(
    r"(?i)\b(?:I chose|I decided|I'm switching|I am switching|I will|I'll|decided to|we chose|instead of|rather than)\b",
);

const PATH_KEYS: [&str; 5] = ["path", "file", "file_path", "filename", "filepath"];
const COMMAND_KEYS: [&str; 3] = ["command", "cmd", "script"];

/// Everything the span says, in order of appearance.
pub fn extract(span: &[Message], text_cap: usize) -> Sections {
    let mut s = Sections::default();
    // call id -> the command it ran, to attach exit statuses.
    let mut commands: HashMap<&str, String> = HashMap::new();
    // The newest assistant text's statements wait: the latest state says them.
    let mut pending: Option<String> = None;
    for m in span {
        // The request is gone: nobody will read this summary.
        if crate::tokens::cancel::cancelled() {
            break;
        }
        for part in &m.parts {
            match part {
                Part::Text(t) => {
                    let quoted = || format!("\"{}\"", fit(t, Size::Chars(text_cap), How::Telling));
                    match m.role {
                        Role::User => s.requests.push(quoted()),
                        // An instruction given mid-thread is an instruction still.
                        Role::System | Role::Developer => {
                            s.requests
                                .push(format!("({}) {}", m.role.as_str(), quoted()));
                        }
                        Role::Assistant => {
                            if !t.trim().is_empty() {
                                s.state = Some(t.trim().to_string());
                                s.stated.push(pending.take().unwrap_or_default());
                                pending = Some(statements(t, text_cap));
                            }
                            decisions(&mut s, t);
                        }
                        _ => {}
                    }
                    scan(&mut s, t, false);
                }
                Part::Refusal(t) => scan(&mut s, t, false),
                // Thinking is private: never summarized.
                Part::Thinking(_) => {}
                Part::ToolCall(c) => {
                    s.tools.add(&c.name, 1);
                    if let Some(cmd) = arguments(&mut s, &c.arguments) {
                        commands.insert(&c.id, cmd);
                    }
                }
                Part::FunctionCall {
                    name,
                    arguments: args,
                } => {
                    s.tools.add(name, 1);
                    arguments(&mut s, args);
                }
                Part::ToolResult(r) => {
                    for inner in &r.content {
                        if let Part::Text(t) = inner {
                            scan(&mut s, t, true);
                            if let (Some(cmd), Some(code)) =
                                (commands.get(r.call_id.as_str()), exit_status(t))
                                && code != 0
                            {
                                // In place of its plain entry.
                                let marked = format!("`{cmd}` (exit status {code})");
                                s.commands.mark_command(&format!("`{cmd}`"), marked);
                            }
                        }
                    }
                }
                Part::RedactedThinking(_) | Part::Media(_) | Part::Opaque(_) => {}
            }
        }
    }
    s
}

/// An assistant text's statements of fact (decisions aside) in `cap` characters.
fn statements(text: &str, cap: usize) -> String {
    // The user sets the rules: an instruction word of the agent's tells nothing.
    let facts = told(sentences(text).map(str::trim), |t| {
        facts(t) > 0 && !DECISION.get().is_match(t)
    });
    fit(&facts.join(" "), Size::Chars(cap), How::Telling)
}

/// Paths and error lines of a text; of tool output (`output`), only the paths
/// on error or location lines (a file's own text is not a reference). Each
/// pattern runs over the whole text, not once a line: tool output is most
/// of a thread, in short lines.
fn scan(s: &mut Sections, text: &str, output: bool) {
    let mut lines = ERROR.find(text);
    for line in &lines {
        s.errors.push(text[line.clone()].trim());
    }
    let path = PATH.get();
    if !output {
        // A path holds no line break: the whole text finds what its lines would.
        for c in path.captures_iter(text) {
            s.files.push(&c[1]);
        }
        return;
    }
    lines.extend(LOCATION.find(text));
    lines.sort_unstable_by_key(|l| l.start);
    lines.dedup();
    for line in lines {
        for c in path.captures_iter(text[line].trim()) {
            s.files.push_seen(&c[1]);
        }
    }
}

fn decisions(s: &mut Sections, text: &str) {
    for sentence in sentences(text) {
        if DECISION.get().is_match(sentence) {
            s.decisions.push(sentence.trim());
        }
    }
}

/// Files and commands named in a tool call's arguments; returns the command.
fn arguments(s: &mut Sections, args: &str) -> Option<String> {
    let Ok(Value::Object(map)) = serde_json::from_str::<Value>(args) else {
        scan(s, args, false);
        return None;
    };
    let mut command = None;
    for (key, value) in &map {
        let Some(v) = value.as_str() else { continue };
        let key = key.to_ascii_lowercase();
        if PATH_KEYS.contains(&key.as_str()) {
            s.files.push(v.trim());
        } else if COMMAND_KEYS.contains(&key.as_str()) {
            let plain = format!("`{}`", v.trim());
            s.commands.push_command(plain);
            command = Some(v.trim().to_string());
        } else if v.len() < 4096 {
            // Long values (file contents being written) would flood the lists.
            for c in PATH.get().captures_iter(v) {
                s.files.push(&c[1]);
            }
        }
    }
    command
}

fn exit_status(text: &str) -> Option<i64> {
    EXIT_STATUS
        .get()
        .captures_iter(text)
        .last()
        .and_then(|c| c[1].parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The per-line reading `scan` replaced (the exact patterns on each
    /// trimmed line): the oracle for the whole-text one.
    fn scan_by_line(text: &str, output: bool) -> (Vec<String>, Vec<String>) {
        let (error, location) = (ERROR.exact.get(), LOCATION.exact.get());
        let mut s = Sections::default();
        for line in text.lines().map(str::trim) {
            let is_error = error.is_match(line);
            if is_error {
                s.errors.push(line);
            }
            if !output || is_error || location.is_match(line) {
                for c in PATH.get().captures_iter(line) {
                    s.files.push(&c[1]);
                }
            }
        }
        (s.errors.items, s.files.items)
    }

    proptest::proptest! {
        #[test]
        fn the_whole_text_finds_what_its_lines_would(
            pieces in proptest::collection::vec(proptest::sample::select(vec![
                "error: x", "error[E0308]: mismatched", "  \u{2003}fatal: no", "thread 'm' panicked at src/a.rs:1:2",
                "ValueError: bad", "at a/b.js:3:4", "  --> src/lib.rs:3:5", "File \"x/y.py\", line 2",
                "src/c.rs", "x:1:2 y/z.ts:3:4 :5:6", "\n", "\r\n", " ", "\t", "panic: at", "Error: \r", "plain text",
                "/usr/lib/x.so", "Traceback (most recent call last):", "npm ERR! code 1", "\u{85}", "é/ü.rs",
                "Segmentation fault", "FAILED t::x", "ERROR: no", "KeyException: k", "at", ":1:", "a:١:٢",
            ]), 0..24),
            output in proptest::bool::ANY,
        ) {
            let text = pieces.concat();
            let mut s = Sections::default();
            scan(&mut s, &text, output);
            proptest::prop_assert_eq!((s.errors.items, s.files.items), scan_by_line(&text, output));
        }
    }

    fn paths(text: &str) -> Vec<String> {
        let mut s = Sections::default();
        scan(&mut s, text, false);
        s.files.items
    }

    #[test]
    fn paths_with_directories_and_extensions() {
        assert_eq!(
            paths("see src/a.rs:10:5 and ./b/c.py."),
            ["src/a.rs", "./b/c.py"]
        );
        assert_eq!(
            paths("at syn-2.0.119/src/print.rs:373:5:"),
            ["syn-2.0.119/src/print.rs"]
        );
        assert_eq!(
            paths("idx/wasi-0.11.1+wasi-snapshot-preview1/Cargo.toml"),
            ["idx/wasi-0.11.1+wasi-snapshot-preview1/Cargo.toml"]
        );
        assert_eq!(
            paths("/usr/lib/x.so and memchr-2.8.3/.vim/coc-settings.json"),
            ["/usr/lib/x.so", "memchr-2.8.3/.vim/coc-settings.json"]
        );
        assert!(paths("https://example.com/a/b.html version 0.11.1 e.g. foo").is_empty());
    }

    #[test]
    fn error_lines() {
        let mut s = Sections::default();
        scan(
            &mut s,
            "ok\nerror[E0308]: mismatched types\n  --> x\nValueError: bad\nnpm ERR! code ELIFECYCLE\nwarning: unused\n",
            false,
        );
        assert_eq!(
            s.errors.items,
            [
                "error[E0308]: mismatched types",
                "ValueError: bad",
                "npm ERR! code ELIFECYCLE"
            ]
        );
        assert_eq!(exit_status("boom\n\nexit status: 101\n"), Some(101));
    }

    #[test]
    fn decisions_are_whole_sentences() {
        let mut s = Sections::default();
        decisions(
            &mut s,
            "Read src/lib.rs. I'll fix src/lib.rs instead of main.rs! Done?\nI chose tabs",
        );
        assert_eq!(
            s.decisions.items,
            ["I'll fix src/lib.rs instead of main.rs!", "I chose tabs"]
        );
    }
}
