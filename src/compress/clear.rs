//! Tool-result clearing, the step before any summary: Anthropic's context
//! editing, deterministic and for any provider. Hiding old tool output keeps
//! an agent about as capable as an LLM summary at half the cost. Calls and
//! results stay paired; a placeholder is recognized, so clearing is idempotent.

use std::collections::{BTreeMap, HashSet};

use serde::Serialize;
use serde_json::Value;

use super::binding::without_thinking;
use super::placeholder::Template;
use super::{Outcome, Reason};
use crate::policy::ClearSettings;
use crate::thread::{Clearing, Message, Part, Role, Thread, ToolResult, clear};
use crate::tokens::{Counter, ThreadCount};

/// One edit clearing made, as the response reports it (Anthropic's
/// `applied_edits`); `cleared_input_tokens` is what it saved, the count
/// before minus the count after (as `POST /v1/tokens` counts).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum AppliedEdit {
    ClearToolUses {
        /// Tool uses whose result (or input) this edit cleared.
        cleared_tool_uses: usize,
        #[schema(minimum = 1)]
        cleared_input_tokens: usize,
        /// Tool uses whose results are intact after it.
        kept_tool_uses: usize,
    },
    ClearThinking {
        /// Assistant turns whose thinking blocks were removed.
        cleared_thinking_turns: usize,
        #[schema(minimum = 1)]
        cleared_input_tokens: usize,
    },
    /// Kept turns whose thinking was removed because its prefix changed (a
    /// summary, a cut or a cleared result precedes them): Anthropic would
    /// refuse the block, OpenAI's Responses API would drop the reasoning
    /// item unannounced (see `binding`).
    RemoveStaleThinking {
        #[schema(minimum = 1)]
        removed_thinking_turns: usize,
        #[schema(minimum = 1)]
        cleared_input_tokens: usize,
    },
}

/// A tool use of the thread: the message holding the call, and the one
/// holding its result (None while it is pending).
struct Use<'a> {
    call: usize,
    id: &'a str,
    name: &'a str,
    arguments: &'a str,
    result: Option<(usize, &'a ToolResult)>,
}

fn uses(t: &Thread, from: usize) -> Vec<Use<'_>> {
    let mut results: BTreeMap<&str, (usize, &ToolResult)> = BTreeMap::new();
    for (i, m) in t.messages.iter().enumerate().skip(from) {
        for r in m.tool_results() {
            results.entry(r.call_id.as_str()).or_insert((i, r));
        }
    }
    let mut out = Vec::new();
    for (i, m) in t.messages.iter().enumerate().skip(from) {
        if m.summary_marker().is_some() {
            continue;
        }
        for c in m.tool_calls() {
            out.push(Use {
                call: i,
                id: &c.id,
                name: &c.name,
                arguments: &c.arguments,
                result: results.get(c.id.as_str()).copied(),
            });
        }
    }
    out
}

/// Clears `t` by `s` when due (always when `force`), keeping `count` in
/// step; the edits made and the first message they changed.
pub(super) fn apply(
    t: &mut Thread,
    count: &mut ThreadCount,
    s: &ClearSettings,
    force: bool,
    c: &Counter<'_>,
) -> (Vec<AppliedEdit>, Option<usize>) {
    let pinned = t.pinned_len();
    let all = uses(t, pinned);
    let due = force
        || s.trigger
            .input_tokens
            .is_some_and(|n| count.total as u64 >= n)
        || s.trigger.tool_uses.is_some_and(|n| all.len() as u64 >= n);
    if !due {
        return (Vec::new(), None);
    }
    let mut edits = Vec::new();
    let mut first: Option<usize> = None;
    let mut note = |changes: &[Change]| {
        let at = changes.iter().map(|ch| ch.at).min();
        first = first.into_iter().chain(at).min();
    };
    let (changes, cleared, kept) = tool_changes(t, &all, count, s, c);
    let (changes, saved) = measure(changes, count, c);
    if saved > 0 && saved as u64 >= s.clear_at_least {
        note(&changes);
        commit(t, count, changes);
        edits.push(AppliedEdit::ClearToolUses {
            cleared_tool_uses: cleared,
            cleared_input_tokens: saved,
            kept_tool_uses: kept,
        });
    }
    if let Some(keep) = s.keep_thinking_turns {
        let (changes, saved) = measure(thinking_changes(t, pinned, keep as usize), count, c);
        let turns = changes.len();
        if saved > 0 {
            note(&changes);
            commit(t, count, changes);
            edits.push(AppliedEdit::ClearThinking {
                cleared_thinking_turns: turns,
                cleared_input_tokens: saved,
            });
        }
    }
    (edits, first)
}

/// The rewritten messages by index, and how many tool uses they clear and keep.
fn tool_changes<'a>(
    t: &Thread,
    all: &[Use<'a>],
    count: &ThreadCount,
    s: &ClearSettings,
    c: &Counter<'_>,
) -> (Vec<(usize, Message)>, usize, usize) {
    let template = Template::new(&s.placeholder);
    let older = all.len().saturating_sub(s.keep as usize);
    let excluded: HashSet<&str> = s.exclude_tools.iter().map(String::as_str).collect();
    let mut what: BTreeMap<usize, Clearing<'_>> = BTreeMap::new();
    let (mut cleared, mut gone) = (0, 0);
    for u in &all[..older] {
        if excluded.contains(u.name) {
            continue;
        }
        let mut this = false;
        if let Some((at, r)) = u.result {
            if is_placeholder(r, &template, u.name) {
                gone += 1;
            } else {
                let chars: usize = r.content.iter().map(text_chars).sum();
                let text = template.render(u.name, chars);
                if saves(&t.messages[at], count.messages[at], r, &text, c) {
                    what.entry(at).or_default().results.insert(u.id, text);
                    this = true;
                }
            }
        }
        if s.clear_tool_inputs && c.raw(u.arguments) > c.raw("{}") {
            what.entry(u.call).or_default().inputs.insert(u.id);
            this = true;
        }
        cleared += usize::from(this);
    }
    let changes = what
        .iter()
        .filter_map(|(&i, w)| clear(&t.messages[i], t.format, w).map(|m| (i, m)))
        .collect();
    (changes, cleared, all.len() - cleared - gone)
}

/// Whether `text` in place of `r`'s content saves tokens. A message that is
/// only this result is counted already, so only the placeholder is tokenized.
fn saves(m: &Message, tokens: usize, r: &ToolResult, text: &str, c: &Counter<'_>) -> bool {
    if m.parts.len() == 1 {
        let after = Message {
            role: m.role,
            name: m.name.clone(),
            parts: vec![Part::ToolResult(ToolResult {
                call_id: r.call_id.clone(),
                content: vec![Part::Text(text.to_string())],
                is_error: r.is_error,
                pointer: String::new(),
            })],
            plain: false,
            iteration: None,
            raw: Value::Null,
        };
        return c.message(&after).tokens < tokens;
    }
    c.raw(text) < r.content.iter().map(|p| c.part(p)).sum::<usize>()
}

fn is_placeholder(r: &ToolResult, template: &Template, tool: &str) -> bool {
    matches!(&r.content[..], [Part::Text(s)] if template.matches(s, tool))
}

fn text_chars(p: &Part) -> usize {
    match p {
        Part::Text(s) => s.chars().count(),
        _ => 0,
    }
}

/// Assistant messages whose thinking goes: all but the newest `keep`, the
/// current turn (an in-progress tool loop, whose thinking providers require)
/// and a message that is only thinking (it would be left empty).
fn thinking_changes(t: &Thread, pinned: usize, keep: usize) -> Vec<(usize, Message)> {
    let current = t
        .messages
        .iter()
        .rposition(|m| m.role == Role::User && m.parts.iter().any(|p| matches!(p, Part::Text(_))))
        .unwrap_or(0)
        .max(pinned);
    let with: Vec<usize> = (pinned..t.messages.len())
        .filter(|&i| {
            let m = &t.messages[i];
            m.role == Role::Assistant && m.has_thinking()
        })
        .collect();
    let older = with.len().saturating_sub(keep);
    with[..older]
        .iter()
        .filter(|&&i| i < current && !t.messages[i].parts.iter().all(Part::is_thinking))
        .filter_map(|&i| without_thinking(&t.messages[i], t.format).map(|m| (i, m)))
        .collect()
}

/// A rewritten message, its index and its count.
struct Change {
    at: usize,
    message: Message,
    tokens: usize,
}

/// The changes, counted, and the tokens they save.
fn measure(
    changes: Vec<(usize, Message)>,
    count: &ThreadCount,
    c: &Counter<'_>,
) -> (Vec<Change>, usize) {
    let changes: Vec<Change> = changes
        .into_iter()
        .map(|(at, message)| Change {
            tokens: c.message(&message).tokens,
            at,
            message,
        })
        .collect();
    let saved = changes
        .iter()
        .map(|ch| count.messages[ch.at].saturating_sub(ch.tokens))
        .sum();
    (changes, saved)
}

fn commit(t: &mut Thread, count: &mut ThreadCount, changes: Vec<Change>) {
    for ch in changes {
        count.total = count.total - count.messages[ch.at] + ch.tokens;
        count.messages[ch.at] = ch.tokens;
        t.messages[ch.at] = ch.message;
    }
}

/// What clearing did, carried from planning to the answer.
pub(super) struct Cleared {
    /// The request thread's count, before clearing.
    pub tokens_before: usize,
    pub edits: Vec<AppliedEdit>,
    /// The first message clearing changed.
    pub from: Option<usize>,
}

impl Cleared {
    /// `outcome` counted from the thread as sent, with clearing's edits
    /// before its own; compressed when the edits alone changed the thread.
    pub fn report(mut self, mut outcome: Outcome) -> Outcome {
        self.edits.append(&mut outcome.applied_edits);
        outcome.tokens_before = self.tokens_before;
        if !self.edits.is_empty() {
            outcome.compressed = true;
            if matches!(outcome.reason, None | Some(Reason::Rules)) {
                outcome.reason = Some(Reason::ToolResultsCleared);
            }
        }
        outcome.applied_edits = self.edits;
        outcome
    }
}
