//! Making a compressed thread fit `context_window - response_reserve`.
//!
//! The order is fixed and each step is reported: cut the longest tool results
//! in the middle, then any long text, then shrink the summary, then drop the
//! oldest tail units. The pinned prefix is never touched.

use std::collections::BTreeSet;

use crate::thread::{Cut, Message, WireFormat, truncate};
use crate::tokens::{Counter, REPLY_PRIMING};

/// Character lengths tried, longest first, when cutting texts in the middle.
const KEEP_CHARS: [usize; 8] = [16_000, 8_000, 4_000, 2_000, 1_000, 500, 250, 120];

/// The compressed thread being assembled, with its token counts.
pub struct Draft {
    /// Anthropic's top-level system, unchanged.
    pub system: Option<Message>,
    pub pinned: Vec<Message>,
    pub summary: Option<Message>,
    /// Kept messages with their index in the request.
    pub tail: Vec<(usize, Message)>,
    pub tools_tokens: usize,
    pub truncated: BTreeSet<usize>,
    pub dropped: Vec<usize>,
}

impl Draft {
    /// Tokens of everything but the summary and the tail.
    pub fn fixed(&self, c: &Counter<'_>) -> usize {
        self.system
            .iter()
            .chain(&self.pinned)
            .map(|m| c.message(m).tokens)
            .sum::<usize>()
            + self.tools_tokens
            + REPLY_PRIMING
    }

    pub fn tail_tokens(&self, c: &Counter<'_>) -> usize {
        self.tail.iter().map(|(_, m)| c.message(m).tokens).sum()
    }

    pub fn total(&self, c: &Counter<'_>) -> usize {
        self.fixed(c)
            + self.summary.as_ref().map_or(0, |m| c.message(m).tokens)
            + self.tail_tokens(c)
    }

    /// Cuts texts of the tail (tool results only, or any) to ever shorter
    /// lengths until the draft fits `budget`; true when it does.
    pub fn cut_texts(
        &mut self,
        c: &Counter<'_>,
        format: WireFormat,
        cut: Cut,
        budget: usize,
    ) -> bool {
        for keep in KEEP_CHARS {
            if self.total(c) <= budget {
                return true;
            }
            for (index, m) in &mut self.tail {
                if let Some(short) = truncate(m, format, cut, keep) {
                    *m = short;
                    self.truncated.insert(*index);
                }
            }
        }
        self.total(c) <= budget
    }

    /// Drops the oldest whole unit of the tail, keeping at least one; false
    /// when only one unit is left. `units` are lengths of the tail's units.
    pub fn drop_oldest_unit(&mut self, unit_len: usize) -> bool {
        if unit_len >= self.tail.len() {
            return false;
        }
        for (index, _) in self.tail.drain(..unit_len) {
            self.truncated.remove(&index);
            self.dropped.push(index);
        }
        true
    }

    /// The output messages, in order.
    pub fn messages(&self) -> Vec<Message> {
        self.pinned
            .iter()
            .chain(&self.summary)
            .chain(self.tail.iter().map(|(_, m)| m))
            .cloned()
            .collect()
    }
}
