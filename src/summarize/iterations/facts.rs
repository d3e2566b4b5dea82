//! The heuristic summary of one iteration: the plain heuristic's sections
//! told in a few sentences on one line.

use crate::summarize::extract::extract;
use crate::summarize::sections::{Caps, List, Sections};
use crate::thread::{Message, Part, Role};

/// What one iteration's messages say.
pub(in crate::summarize) struct Facts {
    /// Everything but the failing commands.
    sections: Sections,
    /// Commands that ended with a non-zero exit status: kept before others.
    failing: List,
    messages: usize,
    /// No assistant text and no tool output: said, lest it seem to have done something.
    silent: bool,
}

impl Facts {
    pub fn of(span: &[Message]) -> Facts {
        let mut sections = extract(span, Caps::default().text);
        let mut failing = List::default();
        let mut others = List::default();
        for c in std::mem::take(&mut sections.commands.items) {
            if c.contains("(exit status ") {
                failing.push(c);
            } else {
                others.push(c);
            }
        }
        sections.commands = others;
        // A decision that is also the last word is said once, as a decision:
        // those are kept longer when the entry is folded (capped first: linear).
        sections
            .decisions
            .cap(Caps::default().decisions.saturating_mul(4), false);
        if let Some(state) = sections.state.take() {
            let mut rest = state;
            for d in &sections.decisions.items {
                if let Some(at) = rest.find(d.as_str()) {
                    rest.replace_range(at..at + d.len(), " ");
                }
            }
            let rest = one_line(&rest);
            sections.state = (!rest.is_empty()).then_some(rest);
        }
        let silent = !span.iter().any(|m| {
            m.parts.iter().any(|p| match p {
                Part::Text(t) => m.role == Role::Assistant && !t.trim().is_empty(),
                Part::ToolResult(r) => r
                    .content
                    .iter()
                    .any(|p| matches!(p, Part::Text(t) if !t.trim().is_empty())),
                _ => false,
            })
        });
        Facts {
            sections,
            failing,
            messages: span.len(),
            silent,
        }
    }

    /// Everything, at the plain heuristic's default caps.
    pub fn full(&self) -> String {
        self.render(Caps::default())
    }

    /// The facts at `caps`, on one line.
    pub fn render(&self, caps: Caps) -> String {
        let mut s = self.sections.clone();
        s.apply(caps);
        let mut failing = self.failing.clone();
        failing.cap(caps.commands, false);
        let mut out: Vec<String> = Vec::new();
        if s.requests.items.is_empty() {
            let plural = if self.messages == 1 { "" } else { "s" };
            out.push(format!("{} message{plural} of agent work.", self.messages));
        }
        sentence(&mut out, "The user asked ", &s.requests, "; ");
        if self.silent {
            out.push("It produced no output (no assistant text, no tool output).".into());
        }
        sentence(&mut out, "Failing commands: ", &failing, "; ");
        sentence(&mut out, "Errors: ", &s.errors, "; ");
        let tools = s.tools.shown();
        if !tools.is_empty() {
            out.push(format!("The agent used {}.", tools.join(", ")));
        }
        sentence(&mut out, "Commands run: ", &s.commands, "; ");
        sentence(&mut out, "Files: ", &s.files, ", ");
        if !s.decisions.items.is_empty() {
            out.push(format!("Decisions: {}", s.decisions.items.join(" ")));
        }
        if let Some(state) = &s.state {
            out.push(format!("It ended with: {state}"));
        }
        one_line(&out.join(" "))
    }
}

/// `text` on one line, so the list reads back.
pub(super) fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `Opening: a; b (and N more).`, when `l` has items.
fn sentence(out: &mut Vec<String>, opening: &str, l: &List, sep: &str) {
    if !l.items.is_empty() {
        let more = match l.more {
            0 => String::new(),
            n => format!(" (and {n} more)"),
        };
        out.push(format!("{opening}{}{more}.", l.items.join(sep)));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::summarize::canonical;
    use crate::thread::{RawThread, parse};

    fn messages(raw: Vec<serde_json::Value>) -> Vec<Message> {
        let t = parse(RawThread {
            messages: &raw,
            ..Default::default()
        })
        .unwrap();
        canonical(&t.messages)
    }

    #[test]
    fn every_request_and_the_failing_command() {
        let f = Facts::of(&messages(vec![
            json!({"role": "user", "content": "Fix the build."}),
            json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "shell", "arguments": "{\"command\": \"cargo build\"}"}}
            ]}),
            json!({"role": "tool", "tool_call_id": "a", "content": "error: linker failed\nexit status: 1"}),
            json!({"role": "user", "content": "Also keep src/main.rs small."}),
            json!({"role": "assistant", "content": "I'll split src/main.rs instead of growing it."}),
            json!({"role": "assistant", "content": "Split done."}),
        ]));
        let text = f.full();
        assert!(
            text.starts_with(
                "The user asked \"Fix the build.\"; \"Also keep src/main.rs small.\"."
            ),
            "{text}"
        );
        assert!(
            text.contains("Failing commands: `cargo build` (exit status 1)."),
            "{text}"
        );
        assert!(text.contains("Errors: error: linker failed."), "{text}");
        assert!(
            text.contains("Decisions: I'll split src/main.rs instead of growing it."),
            "{text}"
        );
        assert!(text.ends_with("It ended with: Split done."), "{text}");
        assert!(!text.contains("no output"), "{text}");
        assert!(!text.contains('\n'));
    }

    #[test]
    fn a_decision_in_the_last_word_is_said_as_a_decision() {
        let f = Facts::of(&messages(vec![
            json!({"role": "user", "content": "Go."}),
            json!({"role": "assistant", "content": "I chose to return a typed error enum instead of strings. The change compiles."}),
        ]));
        let text = f.full();
        assert!(
            text.contains("Decisions: I chose to return a typed error enum instead of strings."),
            "{text}"
        );
        assert!(
            text.ends_with("It ended with: The change compiles."),
            "{text}"
        );
    }

    #[test]
    fn an_empty_iteration_says_so_in_the_singular() {
        let f = Facts::of(&messages(vec![json!({"role": "assistant", "content": ""})]));
        assert_eq!(
            f.full(),
            "1 message of agent work. It produced no output (no assistant text, no tool output)."
        );
    }
}
