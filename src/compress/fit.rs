//! The [`Draft`] being fitted (see `finish::draft`): it recounts only the
//! messages that change, so fitting is linear in the thread.

use std::collections::{BTreeSet, VecDeque};

use crate::thread::{Cut, Keep, Message, Role, WireFormat, truncate_to};
use crate::tokens::Counter;

/// Character lengths tried, longest first, when cutting texts in the middle.
const KEEP_CHARS: [usize; 8] = [16_000, 8_000, 4_000, 2_000, 1_000, 500, 250, 120];

/// A kept message of the tail: its index in the request, the message, its tokens.
pub struct Kept {
    pub index: usize,
    pub message: Message,
    pub tokens: usize,
}

/// The compressed thread being assembled, with its token counts.
pub struct Draft {
    /// Tokens of everything but the summary and the tail (system, pinned, tools, priming).
    pub fixed: usize,
    pub pinned: Vec<Message>,
    /// The summary message and its tokens.
    pub summary: Option<(Message, usize)>,
    /// Instruction messages of the summarized span (and of tail units
    /// dropped to fit): kept after the summary, never cut.
    pub instructions: Vec<Kept>,
    instruction_tokens: usize,
    /// The format takes instructions only after a user turn (Anthropic):
    /// see `Draft::lead`.
    pub instructions_follow_user: bool,
    /// A deque: dropping units from a `Vec`'s front would be quadratic.
    pub tail: VecDeque<Kept>,
    tail_tokens: usize,
    pub truncated: BTreeSet<usize>,
    pub dropped: Vec<usize>,
}

impl Draft {
    pub fn new(fixed: usize, pinned: Vec<Message>, tail: Vec<Kept>) -> Self {
        let tail_tokens = tail.iter().map(|k| k.tokens).sum();
        Self {
            fixed,
            pinned,
            summary: None,
            instructions: Vec::new(),
            instruction_tokens: 0,
            instructions_follow_user: false,
            tail: tail.into(),
            tail_tokens,
            truncated: BTreeSet::new(),
            dropped: Vec::new(),
        }
    }

    pub fn keep_instructions(&mut self, kept: impl IntoIterator<Item = Kept>) {
        for k in kept {
            self.instruction_tokens += k.tokens;
            self.instructions.push(k);
        }
    }

    pub fn set_summary(&mut self, message: Message, c: &Counter<'_>) {
        let tokens = c.message(&message).tokens;
        self.summary = Some((message, tokens));
    }

    /// A tail message went from `before` to `after` tokens.
    pub fn adjust_tail(&mut self, before: usize, after: usize) {
        self.tail_tokens = self.tail_tokens - before + after;
    }

    /// Tokens of everything but the summary.
    pub fn without_summary(&self) -> usize {
        self.fixed + self.instruction_tokens + self.tail_tokens
    }

    pub fn total(&self) -> usize {
        self.fixed
            + self.instruction_tokens
            + self.summary.as_ref().map_or(0, |(_, n)| *n)
            + self.tail_tokens
    }

    /// Cuts the tail's texts ever shorter until the draft fits; true when it does.
    pub fn cut_texts(
        &mut self,
        c: &Counter<'_>,
        format: WireFormat,
        cut: Cut,
        budget: usize,
    ) -> bool {
        for keep in KEEP_CHARS {
            if self.total() <= budget {
                return true;
            }
            // Instructions are kept verbatim, like the pinned prefix.
            for k in self.tail.iter_mut().filter(|k| !k.message.is_instruction()) {
                if let Some(short) = truncate_to(&k.message, format, cut, keep, Keep::Both) {
                    let tokens = c.message(&short).tokens;
                    self.tail_tokens = self.tail_tokens - k.tokens + tokens;
                    k.message = short;
                    k.tokens = tokens;
                    self.truncated.insert(k.index);
                }
            }
        }
        self.total() <= budget
    }

    /// Drops the oldest unit of the tail; false when only one is left.
    pub fn drop_oldest_unit(&mut self, unit_len: usize) -> bool {
        if unit_len >= self.tail.len() {
            return false;
        }
        let mut kept = Vec::new();
        for k in self.tail.drain(..unit_len) {
            self.tail_tokens -= k.tokens;
            if k.message.is_instruction() && !self.truncated.contains(&k.index) {
                kept.push(k);
                continue;
            }
            self.truncated.remove(&k.index);
            self.dropped.push(k.index);
        }
        self.keep_instructions(kept);
        true
    }

    /// How many tail messages go before the span's instructions. None
    /// where the instructions follow a user turn already (the summary, a
    /// user message in Anthropic) or the format takes them anywhere. Else
    /// (`truncate` writes no summary) the first kept message, a user turn:
    /// Anthropic refuses a thread that opens with a system message, and
    /// takes one only after a user turn. Instructions there still precede
    /// every reply they governed; merging them into the top-level `system`
    /// instead would change the prompt every later request starts with
    /// (the provider's prompt cache) and make them govern from the start.
    fn lead(&self) -> usize {
        let before = self.summary.as_ref().map(|(m, _)| m).or(self.pinned.last());
        let moved = self.instructions_follow_user
            && !self.instructions.is_empty()
            && before.is_none_or(|m| m.role != Role::User);
        usize::from(
            moved
                && self
                    .tail
                    .front()
                    .is_some_and(|k| k.message.role == Role::User),
        )
    }

    /// The output position of each tail message.
    pub fn tail_positions(&self) -> Vec<usize> {
        let (lead, head) = (
            self.lead(),
            self.pinned.len() + usize::from(self.summary.is_some()),
        );
        (0..self.tail.len())
            .map(|p| head + p + if p < lead { 0 } else { self.instructions.len() })
            .collect()
    }

    /// Drops the tail messages at `positions` (ascending), reported dropped.
    pub fn drop_tail(&mut self, positions: &[usize]) {
        let (mut p, mut tokens, mut gone) = (0, 0, Vec::new());
        self.tail.retain(|k| {
            let dropped = positions.binary_search(&p).is_ok();
            p += 1;
            if dropped {
                tokens += k.tokens;
                gone.push(k.index);
            }
            !dropped
        });
        self.tail_tokens -= tokens;
        for index in gone {
            self.truncated.remove(&index);
            self.dropped.push(index);
        }
    }

    /// The output messages, in order.
    pub fn into_messages(self) -> (Vec<Message>, BTreeSet<usize>, Vec<usize>) {
        let lead = self.lead();
        let mut messages = self.pinned;
        messages.extend(self.summary.map(|(m, _)| m));
        let mut tail = self.tail.into_iter().map(|k| k.message);
        messages.extend(tail.by_ref().take(lead));
        messages.extend(self.instructions.into_iter().map(|k| k.message));
        messages.extend(tail);
        (messages, self.truncated, self.dropped)
    }
}
