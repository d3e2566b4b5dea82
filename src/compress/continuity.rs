//! Continuity across turns, for callers that resend their whole history
//! every turn (the proxy): the thread is compressed the same way each turn
//! until the next summary is due, so the prefix a provider sees stays
//! byte-identical and its prompt cache keeps hitting.
//!
//! Summaries are indexed under the rolling hash of the conversation they
//! stand for, seeded with the settings that shape them ([`Anchor`]); one
//! lookup finds the latest summary of the longest summarized prefix, which
//! then stands in as a previous summary would.

use super::{Compression, Setup};
use crate::cache::CachedSummary;
use crate::policy::{PriorSummary, Profile};
use crate::summarize::{Index, KeySettings, Strategy, canonical_with_ends, counting, hashes};
use crate::thread::Thread;

/// The history's continuity hashes, computed once per request.
#[derive(Debug)]
pub(crate) struct Anchor {
    /// End of the pinned prefix: where every indexed conversation starts.
    pinned: usize,
    /// `hashes[j]` covers the canonical history up to and including `j`.
    hashes: Vec<String>,
    /// `ends[j]`: the caller's messages (from `pinned`) canonical `j` ends.
    ends: Vec<usize>,
    /// The caller's messages after the pinned prefix.
    len: usize,
    /// Which of those are instructions (no canonical form of their own).
    instruction: Vec<bool>,
}

impl Anchor {
    /// Hashes `req`'s history after its pinned prefix. CPU work.
    pub fn new(req: &Compression, setup: &Setup) -> Self {
        let instructions = req.instructions.as_deref();
        Self::of(&req.thread, &req.profile, req.strategy, instructions, setup)
    }

    /// Hashes `t`'s history after its pinned prefix, under these settings.
    pub fn of(
        t: &Thread,
        p: &Profile,
        strategy: Strategy,
        instructions: Option<&str>,
        setup: &Setup,
    ) -> Self {
        let pinned = t.pinned_len();
        let (span, ends) = canonical_with_ends(&t.messages[pinned..]);
        let limit = summary_limit(p, setup.context_window);
        let model = setup.model.as_ref().map(|m| m.name.as_str());
        let (_, hashes) = hashes(
            &span,
            &KeySettings {
                writer: "continuity",
                model,
                prior: None,
                limit,
                counting: counting(&setup.counter),
                instructions,
                // Only under the profile that wrote it (another's thresholds
                // may not have made it due); its JSON, not `Debug`, is stable
                // across builds and ignores unset or non-shaping settings.
                extra: format!("{}|{}", strategy.as_str(), p.shaping_json()),
            },
        );
        Self {
            pinned,
            hashes,
            ends,
            len: t.messages.len() - pinned,
            instruction: t.messages[pinned..]
                .iter()
                .map(|m| m.is_instruction())
                .collect(),
        }
    }

    /// The caller's messages after the pinned prefix: where a summary this
    /// request carries comes into use.
    pub fn len(&self) -> usize {
        self.len
    }

    /// What the cache is asked for: every prefix of the history.
    pub fn hashes(&self) -> &[String] {
        &self.hashes
    }

    /// The previous summary a found entry stands for, and where it is in use,
    /// if it covers a prefix of this history ending at a caller's message.
    pub fn prior(&self, entry: CachedSummary) -> Option<(PriorSummary, InUse)> {
        let in_use = InUse {
            key: entry.key.clone(),
            from: entry
                .in_use_from
                .and_then(|n| usize::try_from(n).ok())
                .map(|n| self.pinned + n),
        };
        let at = self.hashes.iter().position(|h| *h == entry.prefix_hash)?;
        let mut covered = self.ends[at];
        let boundary = self.ends.get(at + 1).is_none_or(|&next| next > covered);
        // Written over the instructions after it too (`index`): covers them again.
        let written = usize::try_from(entry.messages_summarized).unwrap_or(0);
        let gap = self.instruction.get(covered..written);
        if gap.is_some_and(|g| g.iter().all(|&i| i)) {
            covered = written;
        }
        // The header counts the messages it replaced, not the instructions
        // kept verbatim after it (the entry's count is where it ends).
        let replaced = self.instruction.iter().take(covered).filter(|&&i| !i);
        let prior = PriorSummary {
            last_message_idx: self.pinned + covered - 1,
            content: Some(entry.content),
            token_count: None,
            messages_summarized: Some(replaced.count() as u64),
            created_at: None,
        };
        boundary.then_some((prior, in_use))
    }

    /// The first message a found entry does not cover (a request index),
    /// as [`Anchor::prior`] reads it; a summary written ahead is indexed
    /// under [`ahead`](crate::summarize::ahead) of its hash.
    pub fn cut(&self, entry: &CachedSummary) -> Option<usize> {
        let hash = entry.prefix_hash.strip_suffix(crate::summarize::AHEAD);
        let entry = CachedSummary {
            prefix_hash: hash.unwrap_or(&entry.prefix_hash).to_string(),
            ..entry.clone()
        };
        self.prior(entry).map(|(p, _)| p.last_message_idx + 1)
    }

    /// The name of this conversation since its last summary (ending before
    /// `start`): the hash through `start`. At most one summary is written
    /// ahead per name at a time, across replicas.
    pub fn since(&self, start: usize) -> Option<&str> {
        let through = start.checked_sub(self.pinned)? + 1;
        let at = self.ends.partition_point(|&e| e < through);
        self.hashes.get(at).map(String::as_str)
    }

    /// The index hashes through each message of the span `start..cut` (as
    /// [`SummaryRequest::prefixes`](crate::summarize::SummaryRequest::prefixes)
    /// reads them); empty when its messages do not line up with the history's.
    pub fn over(&self, start: usize, cut: usize, len: usize) -> Vec<String> {
        let at = |i: usize| {
            let i = i.saturating_sub(self.pinned);
            self.ends.partition_point(|&e| e <= i)
        };
        let (from, to) = (at(start), at(cut));
        match self.hashes.get(from..to) {
            Some(hashes) if to - from == len => hashes.to_vec(),
            _ => Vec::new(),
        }
    }

    /// Where a summary of the history before `cut` is indexed: under the last
    /// canonical message before it, when only instructions (which summaries
    /// never read) stand between; a later turn keeps those as they were.
    pub fn index(&self, cut: usize) -> Option<Index> {
        let covered = cut.checked_sub(self.pinned).filter(|&c| c > 0)?;
        let at = self
            .ends
            .partition_point(|&e| e <= covered)
            .checked_sub(1)?;
        let between = self.instruction.get(self.ends[at]..covered)?;
        between.iter().all(|&i| i).then(|| Index {
            hash: self.hashes[at].clone(),
            span_len: at + 1,
            messages_summarized: covered,
        })
    }
}

/// A reused summary's cache key, and the first message produced after a
/// forwarded request carried it (None until one did).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct InUse {
    pub key: String,
    pub from: Option<usize>,
}

/// What a forwarded request carries, to record with
/// [`Compressor::mark_carried`](super::Compressor::mark_carried): the
/// summary's cache key and the request's messages after the pinned prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Carried {
    pub key: String,
    pub in_use_from: usize,
}

/// The most tokens a summary may take: `max_summary_tokens`, and never more
/// than 30% of the budget.
pub(crate) fn summary_limit(p: &Profile, context_window: u64) -> usize {
    let budget = context_window.saturating_sub(p.response_reserve) as usize;
    (p.max_summary_tokens as usize).min(budget * 3 / 10).max(16)
}
