//! Thinking bound to its prefix (`system`, `tools`, every earlier message),
//! one mechanism for each provider's rule ([`StaleThinking`]):
//! - **Anthropic** (preserved thinking, `Refused`): a thinking block whose
//!   prefix changed makes the API reject the request unless it opts into
//!   `drop_block`, and an active loop's final turn must open with its thinking.
//! - **OpenAI Responses** (newer models, `Dropped`): a reasoning item whose
//!   prefix changed is dropped by the API without an error and listed in
//!   `input_transformations` (`prefix_mismatch`): the model silently loses
//!   it and the client pays for it. OpenAI's advice for custom compaction
//!   (append the summary at the end) keeps nothing valid here: condense
//!   replaces the older span, so every kept item's prefix changes anyway.
//!   OpenAI's own compaction item (the `provider` summarizer) is exempt:
//!   the turns after it keep their reasoning ([`Provenance::compaction`]).
//! - Chat Completions carries no reasoning in its input: no rule.
//!
//! Condense never turns an accepted request into an error, and never
//! forwards thinking after a prefix it changed that the provider would drop
//! unannounced, so it:
//! 1. **defers** a new summary in an active tool loop whose final assistant
//!    message starts with thinking, while the thread fits and what was
//!    forwarded is known (clearing is never deferred; Anthropic only: its
//!    final thinking may not go);
//! 2. **removes** ([`unbind`]) thinking of turns produced before a summary
//!    written now, or before a reused one came into use (`in_use_from`),
//!    the final one kept then with `drop_block` included ([`Prefix::Dropped`]);
//!    a Responses reasoning item goes whole, and the items it preceded lose
//!    their `id` (the API pairs an output item's id with its reasoning and
//!    refuses the one whose reasoning is missing; `call_id` pairs results);
//! 3. else keeps a block it may not remove or cannot judge, with
//!    **`drop_block`** (the API then drops exactly the invalid blocks).
//!    Responses has no such opt-in, and its drop is silent: a reasoning item
//!    condense cannot vouch for (after a cut, a cleared text, a reused
//!    summary whose first use is not recorded) is removed as in rule 2.
//!
//! What it cannot judge includes the caller's own blocks when it keeps no
//! record of what earlier turns forwarded (continuity with no cache record:
//! a new conversation, or one forgotten by a restart, an eviction or a
//! profile change): they may be bound to a prefix condense rewrote then.
//! A thread forwarded as it came (shadow mode, a fallback) is judged so too
//! ([`carries_thinking`]); only a known history defers (rule 1).
//!
//! With Anthropic's thinking off the API ignores every thinking block, so a
//! kept turn of thinking alone would reach it empty, which it refuses (400:
//! every message but a final assistant one needs content). Such a turn is
//! **dropped** whole: it holds no call, so no result loses its pair, and
//! the model reads the same conversation it would have read.

use super::fit::Draft;
use super::{AppliedEdit, Outcome};
use crate::thread::{Clearing, Message, Part, Role, StaleThinking, Thread, WireFormat, clear};
use crate::tokens::Counter;

/// The final assistant message of an active tool loop in `messages[..end]`
/// (its results end the request), when it starts with thinking.
pub(super) fn final_thinking(t: &Thread, end: usize) -> Option<usize> {
    if t.format.stale_thinking() != Some(StaleThinking::Refused) {
        return None;
    }
    let messages = t.messages.get(..end)?;
    let last = messages.iter().rposition(|m| m.role != Role::System)?;
    let results = &t.messages[last];
    if results.role != Role::User || results.tool_results().next().is_none() {
        return None;
    }
    let a = last.checked_sub(1)?;
    let m = &t.messages[a];
    let leads = m.parts.first().is_some_and(Part::is_thinking);
    (m.role == Role::Assistant && m.tool_calls().next().is_some() && leads).then_some(a)
}

/// `t` carries thinking its provider binds to its prefix. Forwarded with no
/// record of what earlier turns forwarded, it needs `drop_block` (thinking
/// on): condense may have rewritten that prefix on a turn it forgot.
pub fn carries_thinking(t: &Thread) -> bool {
    t.format.stale_thinking().is_some() && t.messages.iter().any(Message::has_thinking)
}

/// `m` without its thinking blocks; None when it has none.
pub(super) fn without_thinking(m: &Message, format: WireFormat) -> Option<Message> {
    let strip = Clearing {
        thinking: true,
        ..Default::default()
    };
    clear(m, format, &strip)
}

/// What [`unbind`] did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Unbound {
    /// Assistant turns whose thinking blocks were removed (dropped ones included).
    pub removed_turns: usize,
    /// Turns of thinking alone dropped whole (thinking off).
    pub dropped_turns: usize,
    /// Tokens their removal saved.
    pub saved: usize,
    /// Blocks kept although their prefix may have changed.
    pub drop_block: bool,
    /// Turns kept with thinking of unknown validity: later turns cannot trust this forward.
    pub unknown: usize,
}

impl Unbound {
    /// The applied edit that reports the removal, if anything was removed.
    pub fn edit(&self) -> Option<AppliedEdit> {
        (self.removed_turns > 0).then_some(AppliedEdit::RemoveStaleThinking {
            removed_thinking_turns: self.removed_turns,
            cleared_input_tokens: self.saved,
        })
    }

    /// The warning for the turns whose stale thinking was removed, if any.
    pub fn removed_warning(&self, format: WireFormat) -> Option<String> {
        let n = self.removed_turns - self.dropped_turns;
        (n > 0).then(|| match format.stale_thinking() {
            Some(StaleThinking::Dropped) => format!(
                "removed {n} reasoning item(s) of kept turns: a new summary precedes them, and OpenAI drops reasoning that follows a changed prefix (prefix_mismatch)"
            ),
            _ => format!(
                "removed the thinking of {n} kept assistant turn(s): a new summary precedes them, and Anthropic binds thinking to its prefix"
            ),
        })
    }

    /// The warning for the turns dropped whole, if any.
    pub fn dropped_warning(&self) -> Option<String> {
        (self.dropped_turns > 0).then(|| format!(
            "dropped {} assistant turn(s) holding only thinking: with thinking off Anthropic ignores thinking blocks and refuses an empty turn",
            self.dropped_turns
        ))
    }
}

/// The provider reads kept thinking (so it must be valid, or be dropped by
/// it): Anthropic with thinking on (`required`); a Responses reasoning item
/// always (the API reads it whenever its prefix is unchanged).
fn thinking_read(format: WireFormat, required: bool) -> bool {
    required || format.stale_thinking() == Some(StaleThinking::Dropped)
}

/// A Responses reasoning item: thinking alone, as one item.
fn reasoning(m: &Message) -> bool {
    m.is_item() && m.has_thinking() && m.parts.iter().all(Part::is_thinking)
}

/// Removes the `id` of the items a removed Responses reasoning item
/// preceded (the rest of its response: calls, a message), from `items`:
/// the API refuses an output item sent by id without its reasoning, and
/// pairs a call's result by `call_id`. What it changes: none counted.
fn unpair<'a>(items: impl Iterator<Item = &'a mut Message>) {
    for m in items {
        if m.role != Role::Assistant || m.has_thinking() {
            break;
        }
        if let Some(item) = m.raw.as_object_mut() {
            item.shift_remove("id");
        }
    }
}

/// A kept assistant turn the API would read as empty, with thinking off
/// (`required` false): only thinking, and not the last message (a final
/// assistant message may be empty).
fn empty_without_thinking(m: &Message, required: bool, last: bool) -> bool {
    !required && !last && m.has_thinking() && m.parts.iter().all(Part::is_thinking)
}

/// Marks an outcome that kept every message in place (cleared or cut texts
/// at most): thinking after a change needs `drop_block`, or, without
/// thinking on (`required`), goes; a turn of thinking alone then goes whole.
/// With `unknown_history` any kept thinking needs `drop_block`.
pub(super) fn mark_in_place(
    outcome: &mut Outcome,
    cleared_from: Option<usize>,
    (required, unknown_history): (bool, bool),
    c: &Counter<'_>,
) {
    let t = &mut outcome.thread;
    let rule = t.format.stale_thinking();
    let required = thinking_read(t.format, required);
    // Only Anthropic has an opt-in for blocks condense cannot vouch for.
    let unvouched =
        rule == Some(StaleThinking::Refused) && required && unknown_history && carries_thinking(t);
    let cut = outcome.messages_truncated.iter().copied().min();
    let Some(from) = cut
        .into_iter()
        .chain(cleared_from)
        .min()
        .filter(|_| rule.is_some())
    else {
        outcome.thinking_drop_block = unvouched;
        return;
    };
    let (pinned, last) = (t.pinned_len(), t.messages.len().saturating_sub(1));
    let mut out = Unbound::default();
    // Reasoning after the change may be stale: OpenAI would drop it.
    let stale =
        |i: usize, m: &Message| rule == Some(StaleThinking::Dropped) && i > from && reasoning(m);
    let gone: Vec<usize> = (pinned..t.messages.len())
        .filter(|&i| {
            let m = &t.messages[i];
            let empty = empty_without_thinking(m, required, i == last);
            out.dropped_turns += usize::from(empty);
            empty || stale(i, m)
        })
        .collect();
    // What follows a dropped turn saw another prefix too.
    let from = gone.first().map_or(from, |&i| i.min(from));
    for (i, m) in t.messages.iter_mut().enumerate().skip(from + 1) {
        if !m.has_thinking() || gone.binary_search(&i).is_ok() {
            continue;
        }
        let only_thinking = m.parts.iter().all(Part::is_thinking);
        match without_thinking(m, t.format).filter(|_| !required && !only_thinking) {
            Some(stripped) => {
                out.saved += c
                    .message(m)
                    .tokens
                    .saturating_sub(c.message(&stripped).tokens);
                out.removed_turns += 1;
                *m = stripped;
            }
            // Thinking off, a final turn of thinking alone: valid as it is.
            None if !required => {}
            None => out.drop_block = true,
        }
    }
    if !gone.is_empty() {
        for &i in &gone {
            if reasoning(&t.messages[i]) {
                unpair(t.messages.iter_mut().skip(i + 1));
            }
        }
        out.saved += gone
            .iter()
            .map(|&i| c.message(&t.messages[i]).tokens)
            .sum::<usize>();
        let mut i = 0;
        t.messages.retain(|_| {
            i += 1;
            gone.binary_search(&(i - 1)).is_err()
        });
        outcome
            .messages_truncated
            .retain(|i| gone.binary_search(i).is_err());
        out.removed_turns += gone.len();
        outcome.warnings.extend(out.dropped_warning());
        outcome.messages_dropped.extend(gone);
    }
    outcome.thinking_drop_block = out.drop_block || unvouched;
    outcome.tokens_after = outcome.tokens_after.saturating_sub(out.saved);
    outcome.applied_edits.extend(out.edit());
}

/// How a kept message's thinking relates to the forwarded prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Prefix {
    /// Everything before it is what it was produced after.
    Same,
    /// A summary written now precedes it: it is certainly invalid.
    New,
    /// A reused summary, a cut or a cleared text precedes it: valid only if
    /// it was produced after the same change.
    Unknown,
    /// The final thinking of the request that first carried a reused
    /// summary: kept then with `drop_block`, so the API dropped it if it was
    /// stale, and what followed was produced without it. Removed, as the
    /// model then read the thread; with `drop_block` in case it was valid.
    Dropped,
}

/// What precedes the kept turns, to judge each one's thinking by.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Provenance {
    /// A summary written now stands before every kept turn.
    pub new_summary: bool,
    /// A summary message condense put in (not the caller's own).
    pub inserted: bool,
    /// The first message cut or cleared (request index).
    pub changed: Option<usize>,
    /// A reused summary's first message produced after it was forwarded.
    pub in_use_from: Option<usize>,
    /// The final thinking of that request, kept (with `drop_block`) then.
    pub first_final: Option<usize>,
    /// No record of what earlier turns forwarded ([`carries_thinking`]):
    /// the caller's own blocks are not vouched for either.
    pub unknown_history: bool,
    /// The summary is the provider's own compaction item (`provider`):
    /// OpenAI keeps the reasoning after it valid, so only a later change
    /// (a cut, a cleared text) makes a kept turn's prefix differ.
    pub compaction: bool,
}

impl Provenance {
    /// The prefix of the kept turn at output `position`, request `index`.
    pub fn prefix(&self, position: usize, index: usize) -> Prefix {
        let reused_from = self.in_use_from.filter(|_| self.inserted);
        let changed_before = self.changed.is_some_and(|c| c < index);
        match () {
            _ if self.compaction && !changed_before => Prefix::Same,
            _ if self.new_summary => Prefix::New,
            // Kept with `drop_block` when the summary came into use.
            _ if reused_from.is_some() && self.first_final == Some(index) => Prefix::Dropped,
            // Produced before the reused summary came into use: stale.
            _ if reused_from.is_some_and(|from| index < from) => Prefix::New,
            _ if changed_before => Prefix::Unknown,
            _ if !self.inserted && position == index && !self.unknown_history => Prefix::Same,
            // Produced since: it saw this very prefix.
            _ if reused_from.is_some() => Prefix::Same,
            _ => Prefix::Unknown,
        }
    }
}

/// Removes the thinking of kept turns whose prefix is `New` or `Dropped`; `final_index`
/// (an active loop's final thinking) is kept when `required`. Without
/// thinking on, every block goes, and a turn of thinking alone goes whole.
pub(super) fn unbind(
    draft: &mut Draft,
    format: WireFormat,
    prefix_of: impl Fn(usize, usize) -> Prefix,
    final_index: Option<usize>,
    required: bool,
    c: &Counter<'_>,
) -> Unbound {
    let mut out = Unbound::default();
    let Some(rule) = format.stale_thinking() else {
        return out;
    };
    let required = thinking_read(format, required);
    let positions = draft.tail_positions();
    let last = draft.tail.len().saturating_sub(1);
    let (mut changes, mut gone, mut unpaired) = (Vec::new(), Vec::new(), Vec::new());
    for (p, k) in draft.tail.iter_mut().enumerate() {
        if empty_without_thinking(&k.message, required, p == last) {
            out.saved += k.tokens;
            out.dropped_turns += 1;
            gone.push(p);
            continue;
        }
        let prefix = prefix_of(positions[p], k.index);
        let only_thinking = k.message.parts.iter().all(Part::is_thinking);
        // A reasoning item the API may drop goes whole, reported: OpenAI
        // has no opt-in that would keep it valid, nor an error to see.
        if rule == StaleThinking::Dropped && prefix != Prefix::Same && reasoning(&k.message) {
            out.saved += k.tokens;
            out.removed_turns += 1;
            gone.push(p);
            unpaired.push(p + 1);
            continue;
        }
        // Without thinking on, every block can go, a valid one too (and a
        // final turn of thinking alone stays as it is: it may be empty).
        let valid_kept = prefix == Prefix::Same && required;
        if valid_kept || !k.message.has_thinking() || (!required && only_thinking) {
            continue;
        }
        let unknown_kept = prefix == Prefix::Unknown && required;
        let required_final = required && final_index == Some(k.index);
        if unknown_kept || only_thinking || required_final {
            out.drop_block = true;
            out.unknown += usize::from(prefix == Prefix::Unknown && !required_final);
            continue;
        }
        if let Some(stripped) = without_thinking(&k.message, format) {
            let tokens = c.message(&stripped).tokens;
            changes.push((k.tokens, tokens));
            out.saved += k.tokens.saturating_sub(tokens);
            k.message = stripped;
            k.tokens = tokens;
            out.removed_turns += 1;
            out.drop_block |= required && prefix == Prefix::Dropped;
        }
    }
    for (was, is) in changes {
        draft.adjust_tail(was, is);
    }
    for from in unpaired {
        unpair(draft.tail.iter_mut().skip(from).map(|k| &mut k.message));
    }
    draft.drop_tail(&gone);
    out.removed_turns += out.dropped_turns;
    out
}

#[cfg(test)]
mod tests {
    use super::{Prefix, Provenance};

    #[test]
    fn a_summary_written_now_makes_every_kept_turn_stale() {
        let p = Provenance {
            new_summary: true,
            inserted: true,
            ..Provenance::default()
        };
        assert_eq!(p.prefix(3, 40), Prefix::New);
    }

    #[test]
    fn a_reused_summary_trusts_turns_since_its_first_use() {
        let p = Provenance {
            inserted: true,
            in_use_from: Some(20),
            first_final: Some(18),
            ..Provenance::default()
        };
        assert_eq!(p.prefix(5, 25), Prefix::Same);
        assert_eq!(p.prefix(4, 19), Prefix::New);
        // The final thinking of the first request was kept with drop_block
        // then: the API dropped it if stale, and later turns never saw it.
        assert_eq!(p.prefix(3, 18), Prefix::Dropped);
        // Stale stays stale after a cut; a cut makes the newer ones unknown.
        let cut = Provenance {
            changed: Some(21),
            ..p
        };
        assert_eq!(cut.prefix(4, 19), Prefix::New);
        assert_eq!(cut.prefix(6, 25), Prefix::Unknown);
        // Not recorded: nothing after the summary can be trusted.
        let unknown = Provenance {
            in_use_from: None,
            ..p
        };
        assert_eq!(unknown.prefix(5, 25), Prefix::Unknown);
    }

    #[test]
    fn the_callers_own_thread_keeps_its_prefix_until_a_change() {
        let p = Provenance {
            changed: Some(7),
            ..Provenance::default()
        };
        assert_eq!(p.prefix(5, 5), Prefix::Same);
        assert_eq!(p.prefix(9, 9), Prefix::Unknown);
        // A message left out before it: its prefix is not the one it saw.
        assert_eq!(Provenance::default().prefix(4, 6), Prefix::Unknown);
    }

    #[test]
    fn a_provider_compaction_item_keeps_the_prefix_until_a_later_change() {
        let p = Provenance {
            inserted: true,
            compaction: true,
            unknown_history: true,
            ..Provenance::default()
        };
        assert_eq!(p.prefix(3, 40), Prefix::Same);
        let cut = Provenance {
            changed: Some(41),
            ..p
        };
        assert_eq!(cut.prefix(3, 40), Prefix::Same);
        assert_eq!(cut.prefix(5, 42), Prefix::Unknown);
    }

    #[test]
    fn without_a_record_the_callers_own_thread_is_not_vouched_for() {
        // A restart without the cache: condense may have rewritten it before.
        let p = Provenance {
            unknown_history: true,
            ..Provenance::default()
        };
        assert_eq!(p.prefix(5, 5), Prefix::Unknown);
        let new = Provenance {
            new_summary: true,
            inserted: true,
            ..p
        };
        assert_eq!(new.prefix(3, 40), Prefix::New);
    }
}
