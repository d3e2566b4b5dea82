//! Anthropic's preserved thinking: what a compression may do to a thread
//! whose assistant turns carry thinking blocks.
//!
//! On Anthropic's newer models a thinking (or redacted thinking) block's
//! signature is bound to its prefix: the top-level `system`, the `tools`
//! and every message before the block. If anything in that prefix changed
//! since the block was produced, the block and every later one are invalid,
//! and the API rejects the request (400, "The block is bound to a different
//! conversation") unless the request opts into `drop_block`
//! (`thinking.block_binding.prefix_mismatch_behavior`, beta
//! `thinking-binding-controls-2026-08-01`), in which case the API drops the
//! invalid blocks itself. Condense promises never to turn a request the
//! provider would accept into an error, so every compression that changes
//! what precedes a thinking block follows this rule:
//!
//! 1. **Defer** (in [`defer`]): in an active tool loop, the final assistant
//!    message must start with its thinking block when thinking is on, and
//!    a new summary before it would invalidate that block. While the thread
//!    still fits its window and what was forwarded before is known, no new
//!    summary is written: the previous one (or none) stays, byte for byte,
//!    and the summary is written once the loop ends. Clearing is never
//!    deferred: a result it cleared must stay cleared.
//! 2. **Remove** (in [`unbind`], by [`Provenance`]): when a new summary is
//!    written, every kept turn was produced before it, so its thinking is
//!    bound to a prefix that is gone; the same holds, on later turns, for
//!    the turns produced before a forwarded request first carried the
//!    summary (recorded in the cache, `in_use_from`). Condense removes those
//!    blocks (reported as an applied edit).
//! 3. **drop_block** only where nothing else is valid: a block condense may
//!    not remove (the final assistant message of an active loop, a message
//!    that is only thinking) or whose validity it cannot know (after a cut
//!    or cleared text, after a summary whose first use is not recorded) is
//!    kept, and the request must carry `drop_block` (the proxy adds it and
//!    its beta; `/v1/compress` says so in `thinking_drop_block`). The API
//!    then drops exactly the invalid blocks, which is what removing them
//!    would do.

use super::fit::Draft;
use super::{AppliedEdit, Outcome};
use crate::thread::{Clearing, Part, Role, Thread, WireFormat, clear};
use crate::tokens::Counter;

/// The index of the final assistant message of an active tool loop whose
/// content starts with a thinking block: the thread ends with the results
/// of that message's calls (system messages after them, such as Claude
/// Code's reminders, aside). None when there is no such loop, or the thread
/// is not Anthropic's (only Anthropic binds thinking to its prefix).
pub(super) fn final_thinking(t: &Thread) -> Option<usize> {
    final_thinking_in(t, t.messages.len())
}

/// [`final_thinking`] of the request that held `messages[..end]`.
pub(super) fn final_thinking_in(t: &Thread, end: usize) -> Option<usize> {
    if !t.format.binds_thinking() {
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

/// Whether a compression that would change the prefix of the final
/// thinking block should wait: an active loop needs that block, and the
/// thread still fits (`fits`). Forced compressions and an overflowing
/// window never wait.
pub(super) fn defer(t: &Thread, required: bool, fits: bool, force: bool) -> bool {
    required && fits && !force && final_thinking(t).is_some()
}

/// What [`unbind`] did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Unbound {
    /// Assistant turns whose thinking blocks were removed.
    pub removed_turns: usize,
    /// Tokens their removal saved.
    pub saved: usize,
    /// Blocks kept although their prefix changed (or may have): the request
    /// needs `drop_block`.
    pub drop_block: bool,
    /// Turns kept with thinking of unknown validity (the final thinking of
    /// an active loop aside): the forward is not one later turns can
    /// trust as where a summary came into use.
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
}

/// Marks an outcome that kept every message in place (cleared or cut
/// texts at most, from `cleared_from` and its truncated messages on): its
/// thinking after a change may be bound to the old prefix, so the request
/// needs `drop_block`. Without thinking on (`required`), none is required
/// and none is produced: those blocks go instead, but from a message that
/// holds nothing else.
pub(super) fn mark_in_place(
    outcome: &mut Outcome,
    cleared_from: Option<usize>,
    required: bool,
    c: &Counter<'_>,
) {
    let t = &mut outcome.thread;
    let cut = outcome.messages_truncated.iter().copied().min();
    let Some(from) = cut
        .into_iter()
        .chain(cleared_from)
        .min()
        .filter(|_| t.format.binds_thinking())
    else {
        return;
    };
    let strip = Clearing {
        thinking: true,
        ..Default::default()
    };
    let mut out = Unbound::default();
    for m in t
        .messages
        .iter_mut()
        .skip(from + 1)
        .filter(|m| m.has_thinking())
    {
        let only_thinking = m.parts.iter().all(Part::is_thinking);
        match clear(m, t.format, &strip).filter(|_| !required && !only_thinking) {
            Some(stripped) => {
                out.saved += c
                    .message(m)
                    .tokens
                    .saturating_sub(c.message(&stripped).tokens);
                out.removed_turns += 1;
                *m = stripped;
            }
            None => out.drop_block = true,
        }
    }
    outcome.thinking_drop_block = out.drop_block;
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
}

/// What precedes the kept turns of a compressed thread, to judge each
/// one's thinking by.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Provenance {
    /// A summary written now stands before every kept turn.
    pub new_summary: bool,
    /// A summary message condense put in (not the caller's own).
    pub inserted: bool,
    /// The first message cut or cleared (request index).
    pub changed: Option<usize>,
    /// A reused summary's first message produced after a forwarded request
    /// carried it (request index), when recorded.
    pub in_use_from: Option<usize>,
    /// The final thinking of that request, kept (with `drop_block`) then.
    pub first_final: Option<usize>,
}

impl Provenance {
    /// The prefix of the kept turn at `position` in the output, `index` in
    /// the request.
    pub fn prefix(&self, position: usize, index: usize) -> Prefix {
        let reused_from = self.in_use_from.filter(|_| self.inserted);
        match () {
            _ if self.new_summary => Prefix::New,
            // Produced before the reused summary came into use: stale,
            // whatever else changed (the writing turn removed it too).
            _ if reused_from.is_some_and(|from| index < from)
                && self.first_final != Some(index) =>
            {
                Prefix::New
            }
            _ if self.changed.is_some_and(|c| c < index) => Prefix::Unknown,
            _ if !self.inserted && position == index => Prefix::Same,
            // Produced since: it saw this very prefix.
            _ if reused_from.is_some() && self.first_final != Some(index) => Prefix::Same,
            _ => Prefix::Unknown,
        }
    }
}

/// Removes the thinking of the draft's kept turns whose prefix is `New`
/// (`prefix_of(output position, request index)`), keeping token counts in
/// step, and says whether any kept block needs `drop_block`. `final_index`
/// is the request index of an active loop's final thinking turn, kept
/// when `required` (thinking is on, or may be).
pub(super) fn unbind(
    draft: &mut Draft,
    format: WireFormat,
    prefix_of: impl Fn(usize, usize) -> Prefix,
    final_index: Option<usize>,
    required: bool,
    c: &Counter<'_>,
) -> Unbound {
    let mut out = Unbound::default();
    // Only Anthropic binds thinking to its prefix (a Responses reasoning
    // item travels with its call, see `compress::split`).
    if !format.binds_thinking() {
        return out;
    }
    let strip = Clearing {
        thinking: true,
        ..Default::default()
    };
    let before =
        draft.pinned.len() + usize::from(draft.summary.is_some()) + draft.instructions.len();
    let mut changes = Vec::new();
    for (p, k) in draft.tail.iter_mut().enumerate() {
        let prefix = prefix_of(before + p, k.index);
        let only_thinking = k.message.parts.iter().all(Part::is_thinking);
        // Without thinking on, no block is required and none is produced:
        // every block can go, a valid one too (the one place thinking is
        // removed: the proxy forwards what this leaves).
        let valid_kept = prefix == Prefix::Same && (required || only_thinking);
        if valid_kept || !k.message.has_thinking() {
            continue;
        }
        let unknown_kept = prefix == Prefix::Unknown && required;
        let required_final = required && final_index == Some(k.index);
        if unknown_kept || only_thinking || required_final {
            out.drop_block = true;
            out.unknown += usize::from(prefix == Prefix::Unknown && !required_final);
            continue;
        }
        if let Some(stripped) = clear(&k.message, format, &strip) {
            let tokens = c.message(&stripped).tokens;
            changes.push((k.tokens, tokens));
            out.saved += k.tokens.saturating_sub(tokens);
            k.message = stripped;
            k.tokens = tokens;
            out.removed_turns += 1;
        }
    }
    for (was, is) in changes {
        draft.adjust_tail(was, is);
    }
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
        // The final thinking of the first request was kept with drop_block then.
        assert_eq!(p.prefix(3, 18), Prefix::Unknown);
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
}
