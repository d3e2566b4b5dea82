//! Per-message truncation rules: `max_tool_result_chars`,
//! `max_user_message_chars` and `max_assistant_message_chars` of the
//! profile, keeping `truncate_keep`.
//!
//! Some agents keep their raw recent iterations with each prompt cut to a
//! few hundred characters and each output (tool results, the agent's own
//! text) to a few thousand (um_agent_coder: 500 and 5,000). The rules
//! apply to every message a compression returns verbatim after the pinned
//! prefix (never to the system prompt or the summary message), whether or
//! not a summary was due, before fitting, and the cut messages are reported
//! in `messages_truncated`. A cut text fits its limit marker included, so
//! the rules applied again to their own answer change nothing.

use super::fit::Draft;
use super::{Outcome, Reason};
use crate::policy::{Profile, TruncateKeep};
use crate::thread::{Cut, Keep, Message, Thread, WireFormat, truncate_to};
use crate::tokens::{Counter, ThreadCount};

/// The rules of a profile, when it has any.
pub(super) struct Rules {
    tool_results: Option<usize>,
    user_messages: Option<usize>,
    assistant_messages: Option<usize>,
    keep: Keep,
}

impl Rules {
    pub fn of(p: &Profile) -> Option<Self> {
        let rules = Self {
            tool_results: p.max_tool_result_chars.map(|n| n as usize),
            user_messages: p.max_user_message_chars.map(|n| n as usize),
            assistant_messages: p.max_assistant_message_chars.map(|n| n as usize),
            keep: match p.truncate_keep {
                TruncateKeep::Head => Keep::Head,
                TruncateKeep::Tail => Keep::Tail,
                TruncateKeep::Both => Keep::Both,
            },
        };
        let any = [
            rules.tool_results,
            rules.user_messages,
            rules.assistant_messages,
        ]
        .iter()
        .any(Option::is_some);
        any.then_some(rules)
    }

    /// `m` with the rules applied; None when no rule cuts it.
    fn apply(&self, m: &Message, format: WireFormat) -> Option<Message> {
        if m.summary_marker().is_some() {
            return None;
        }
        let mut cut: Option<Message> = None;
        for (limit, what) in [
            (self.tool_results, Cut::ToolResults),
            (self.user_messages, Cut::UserText),
            (self.assistant_messages, Cut::AssistantText),
        ] {
            let Some(limit) = limit else { continue };
            let current = cut.as_ref().unwrap_or(m);
            if let Some(shorter) = truncate_to(current, format, what, limit, self.keep) {
                cut = Some(shorter);
            }
        }
        cut
    }
}

impl Draft {
    /// Applies the rules to the tail, recounting only the messages they cut.
    pub fn apply_rules(&mut self, rules: &Rules, format: WireFormat, c: &Counter<'_>) {
        let mut changes = Vec::new();
        for k in &mut self.tail {
            if let Some(cut) = rules.apply(&k.message, format) {
                let tokens = c.message(&cut).tokens;
                changes.push((k.tokens, tokens, k.index));
                k.message = cut;
                k.tokens = tokens;
            }
        }
        for (before, after, index) in changes {
            self.adjust_tail(before, after);
            self.truncated.insert(index);
        }
    }
}

/// The answer when nothing is due: the caller's thread as it is, or with the
/// rules applied (`reason: rules`) when they cut something.
pub(super) fn unchanged(
    t: Thread,
    count: &ThreadCount,
    context_window: u64,
    warnings: Vec<String>,
    p: &Profile,
    c: &Counter<'_>,
) -> Outcome {
    let Some(rules) = Rules::of(p) else {
        return Outcome::unchanged(t, count.total, context_window, warnings);
    };
    let pinned = t.pinned_len();
    let cuts: Vec<(usize, Message)> = t.messages[pinned..]
        .iter()
        .enumerate()
        .filter_map(|(i, m)| rules.apply(m, t.format).map(|cut| (pinned + i, cut)))
        .collect();
    if cuts.is_empty() {
        return Outcome::unchanged(t, count.total, context_window, warnings);
    }
    let Thread {
        format,
        system,
        mut messages,
        tools,
    } = t;
    let mut tokens_after = count.total;
    let mut truncated = Vec::with_capacity(cuts.len());
    for (i, cut) in cuts {
        tokens_after = tokens_after - count.messages[i] + c.message(&cut).tokens;
        messages[i] = cut;
        truncated.push(i);
    }
    let thread = Thread {
        format,
        system,
        messages,
        tools,
    };
    Outcome {
        compressed: true,
        reason: Some(Reason::Rules),
        tokens_after,
        messages_truncated: truncated,
        ..Outcome::unchanged(thread, count.total, context_window, warnings)
    }
}
