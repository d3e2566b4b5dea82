//! A summary only when it pays: what writing one now costs under the
//! provider's prompt-cache prices, against what it saves on each later turn.
//!
//! In units of the input price, with P the prompt without the summary, P'
//! with it, Q the unchanged pinned prefix, w the cache-write and c the
//! cache-read multiplier: the summary's turn writes P' - Q at w where it
//! would have read P - Q at c, so it costs X = w(P' - Q) - c(P - Q) more;
//! each later turn reads P' instead of P, saving D = c(P - P'). It is paid
//! back after X / D turns (at once when X <= 0). The summarizer's own calls
//! are not counted: the verdict does not know which writer, or which
//! model's prices, the summary will get.

use super::assess::Assessment;
use crate::tokens::CachePrices;

/// A prompt shorter than this is not cached by either provider (Anthropic's
/// and OpenAI's minimum cacheable prefix): every token is plain input.
const MIN_CACHEABLE: u64 = 1024;

/// One summary's cost and saving, in tokens at the input price.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Payback {
    /// What the summary rewrites, as what can be compressed (P - Q).
    pub before: u64,
    /// Its size after the summary (P' - Q): the newest messages kept and
    /// the summary's message.
    pub after: u64,
    /// X: the summary's turn's extra cost.
    pub extra: f64,
    /// D: what each later turn saves.
    pub saving: f64,
}

impl Payback {
    /// The summary's message at its writer's bound: at most `max_summary`
    /// tokens, and at most the previous summary and half the new span (the
    /// heuristic's own bound; an LLM is asked for no more). An upper bound,
    /// for when the summary is not written yet.
    pub fn bound(a: &Assessment, max_summary: u64) -> u64 {
        max_summary.min(a.summary_tokens + a.gain_tokens / 2)
    }

    /// A summary due on `a` whose message takes `summary` tokens, replacing
    /// the previous one (`a.summary_tokens`).
    pub fn of(a: &Assessment, summary: u64, cache: CachePrices) -> Self {
        // Below the cacheable minimum nothing was cached to lose.
        let cache = match a.total_tokens < MIN_CACHEABLE {
            true => CachePrices::NONE,
            false => cache,
        };
        let before = a.compressible_tokens;
        let kept = before.saturating_sub(a.gain_tokens + a.summary_tokens);
        let after = kept + summary;
        Self {
            before,
            after,
            extra: cache.write * after as f64 - cache.read * before as f64,
            saving: cache.read * (before as f64 - after as f64),
        }
    }

    /// [`of`](Self::of) a summary at its [`bound`](Self::bound).
    pub fn estimate(a: &Assessment, max_summary: u64, cache: CachePrices) -> Self {
        Self::of(a, Self::bound(a, max_summary), cache)
    }

    /// r: the share of what it rewrites that the summary leaves.
    pub fn ratio(&self) -> f64 {
        self.after as f64 / self.before.max(1) as f64
    }

    /// Whether it is paid back within `turns` later turns (X <= turns * D).
    pub fn pays_within(&self, turns: u64) -> bool {
        self.extra <= turns as f64 * self.saving
    }

    /// X / D: the later turns it takes to pay back; 0 when it pays at once,
    /// None when it never does (it saves nothing).
    pub fn turns(&self) -> Option<f64> {
        match (self.extra <= 0.0, self.saving > 0.0) {
            (true, _) => Some(0.0),
            (false, true) => Some(self.extra / self.saving),
            (false, false) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ANTHROPIC: CachePrices = CachePrices {
        read: 0.1,
        write: 1.25,
    };
    const GPT_4O: CachePrices = CachePrices {
        read: 0.5,
        write: 1.0,
    };

    /// A thread of `compressible` tokens after a 300-token prefix, `recent`
    /// of them kept, without a previous summary.
    fn due(compressible: u64, recent: u64) -> Assessment {
        Assessment {
            messages_since_summary: 40,
            iterations_since_summary: 0,
            total_tokens: 300 + compressible,
            exact: true,
            gain_tokens: compressible - recent,
            compressible_tokens: compressible,
            summary_tokens: 0,
            idle: None,
        }
    }

    #[test]
    fn the_closed_form_on_anthropic_prices() {
        // 13,000 tokens to 3,000 kept + a 2,000-token summary: r = 5/13.
        let p = Payback::estimate(&due(13_000, 3_000), 2_000, ANTHROPIC);
        assert_eq!((p.before, p.after), (13_000, 5_000));
        assert!((p.extra - (1.25 * 5_000.0 - 0.1 * 13_000.0)).abs() < 1e-9);
        assert!((p.saving - 800.0).abs() < 1e-9);
        // X / D = (12.5 r - 1) / (1 - r) with r = 5/13: about 6.2 turns.
        let r = p.ratio();
        let closed = (12.5 * r - 1.0) / (1.0 - r);
        assert!((p.turns().unwrap() - closed).abs() < 1e-9);
        assert!(!p.pays_within(6) && p.pays_within(7));
    }

    #[test]
    fn it_pays_at_once_from_r_equal_c_over_w() {
        // c / w = 0.08 on Anthropic: 5,000 tokens left of 62,500 is the boundary.
        let at = |compressible| Payback::estimate(&due(compressible, 3_000), 2_000, ANTHROPIC);
        assert!(at(62_500).pays_within(0));
        assert_eq!(at(62_500).turns(), Some(0.0));
        assert!(!at(62_499).pays_within(0));
        // ...0.5 on gpt-4o: from 10,000.
        let at = |compressible| Payback::estimate(&due(compressible, 3_000), 2_000, GPT_4O);
        assert!(at(10_000).pays_within(0));
        assert!(!at(9_999).pays_within(0));
    }

    #[test]
    fn a_summary_that_saves_nothing_never_pays() {
        // The span is no larger than the kept messages' framing: nothing to save.
        let mut a = due(3_000, 3_000);
        a.gain_tokens = 0;
        let p = Payback::estimate(&a, 2_000, ANTHROPIC);
        assert_eq!(p.turns(), None);
        assert!(!p.pays_within(1_000_000));
    }

    #[test]
    fn a_small_span_is_counted_at_half_its_size() {
        // 4,000 tokens, 1,000 kept: the summary is at most 1,500, not 2,000.
        let p = Payback::estimate(&due(4_000, 1_000), 2_000, GPT_4O);
        assert_eq!(p.after, 2_500);
        // An extension: the previous summary's 600 tokens and half the rest.
        let mut a = due(4_000, 1_000);
        (a.summary_tokens, a.gain_tokens) = (600, 2_400);
        assert_eq!(Payback::estimate(&a, 2_000, GPT_4O).after, 2_800);
    }

    #[test]
    fn an_uncached_prompt_pays_whenever_it_shrinks() {
        // Under 1,024 tokens the provider caches nothing: no write premium.
        let p = Payback::estimate(&due(700, 100), 2_000, ANTHROPIC);
        assert_eq!(p.turns(), Some(0.0));
    }
}
