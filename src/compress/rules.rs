//! Per-message truncation rules (`max_tool_result_chars`,
//! `max_user_message_chars`, `max_assistant_message_chars`, `truncate_keep`):
//! applied to every verbatim message after the pinned prefix, due or not,
//! before fitting. A cut text fits its limit marker included, so applying
//! the rules again to their own answer changes nothing.

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
        let limits = [
            p.max_tool_result_chars,
            p.max_user_message_chars,
            p.max_assistant_message_chars,
        ];
        limits.iter().any(Option::is_some).then(|| Self {
            tool_results: p.max_tool_result_chars.map(|n| n as usize),
            user_messages: p.max_user_message_chars.map(|n| n as usize),
            assistant_messages: p.max_assistant_message_chars.map(|n| n as usize),
            keep: match p.truncate_keep {
                TruncateKeep::Head => Keep::Head,
                TruncateKeep::Tail => Keep::Tail,
                TruncateKeep::Both => Keep::Both,
            },
        })
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
    mut t: Thread,
    count: &ThreadCount,
    context_window: u64,
    warnings: Vec<String>,
    p: &Profile,
    c: &Counter<'_>,
) -> Outcome {
    let (pinned, format) = (t.pinned_len(), t.format);
    let (mut tokens_after, mut truncated) = (count.total, Vec::new());
    if let Some(rules) = Rules::of(p) {
        for (i, m) in t.messages.iter_mut().enumerate().skip(pinned) {
            if let Some(cut) = rules.apply(m, format) {
                tokens_after = tokens_after - count.messages[i] + c.message(&cut).tokens;
                *m = cut;
                truncated.push(i);
            }
        }
    }
    let compressed = !truncated.is_empty();
    Outcome {
        compressed,
        reason: compressed.then_some(Reason::Rules),
        thread: t,
        summary: None,
        tokens_before: count.total,
        tokens_after,
        context_window,
        messages_dropped: Vec::new(),
        messages_truncated: truncated,
        iterations: None,
        degraded: false,
        usage: None,
        applied_edits: Vec::new(),
        thinking_drop_block: false,
        carried: None,
        precompute: None,
        warnings,
    }
}
