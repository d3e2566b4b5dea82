//! The verdict: should this thread be summarized now, and the numbers behind it.
//!
//! The rules and the verdict's shape live here; which summary a request
//! extends is in `prior`, and why a due summary is held back (too small a
//! share, or no payback in time) in `held_back`, beside the payback model.

use serde::Serialize;

use super::assess::{Assessment, assess};
use super::held_back::held_back;
use super::{PriorSummary, Profile};
use crate::thread::Thread;
use crate::tokens::{CachePrices, Counter};

/// The verdict for a thread: count it, leave out what the summary covers,
/// decide (under the model's window and prompt-cache prices).
pub fn verdict(
    thread: &Thread,
    counter: &Counter<'_>,
    profile: &Profile,
    (context_window, cache): (u64, CachePrices),
    prior: Option<&PriorSummary>,
) -> Verdict {
    let count = counter.thread(thread);
    let pinned = thread.pinned_len();
    // A compressed thread sent back holds condense's summary message right
    // after the pinned prefix: the conversation since the summary starts after it.
    let (last, last_summary) = match (super::summary_message(thread, pinned), prior) {
        (Some(m), _) => (
            Some(pinned),
            Some(LastSummary {
                messages_summarized: m.messages_summarized as u64,
                tokens: count.messages[pinned] as u64,
                created_at: None,
            }),
        ),
        (None, Some(p)) => (
            Some(p.last_message_idx),
            Some(LastSummary {
                messages_summarized: p.replaced(thread) as u64,
                tokens: p.tokens(counter, thread),
                created_at: p.created_at.clone(),
            }),
        ),
        (None, None) => (None, None),
    };
    let summary_tokens = last_summary.as_ref().map_or(0, |s| s.tokens);
    let recent = profile.min_recent_messages as usize;
    let a = assess(thread, &count, last, summary_tokens, recent);
    Verdict {
        last_summary,
        ..decide(profile, a, context_window, cache)
    }
}

/// The summary the thread already has, as the status shows it.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LastSummary {
    pub messages_summarized: u64,
    /// What the summary's message costs in the next request.
    pub tokens: u64,
    /// When it was written, as the summary object sent said (at most 64
    /// characters); null when unknown.
    #[schema(required = true, max_length = 64)]
    pub created_at: Option<String>,
}

impl Trigger {
    pub fn as_str(self) -> &'static str {
        match self {
            Trigger::Messages => "messages",
            Trigger::Tokens => "tokens",
            Trigger::ContextWindow => "context_window",
            Trigger::Iterations => "iterations",
            Trigger::ColdCache => "cold_cache",
        }
    }

    /// A summary it calls for costs no extra cache write, so no gate on
    /// churn or payback holds it back: over the window it must be written;
    /// on a cold cache the provider writes the whole prefix again anyway.
    pub fn pays_at_once(self) -> bool {
        matches!(self, Trigger::ContextWindow | Trigger::ColdCache)
    }
}

/// Why summarization is due.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Trigger {
    /// N conversation messages since the last summary.
    Messages,
    /// K tokens in what would be sent.
    Tokens,
    /// What would be sent no longer fits the window minus the reply reserve.
    ContextWindow,
    /// `max_iterations_before_summary` agent iterations since the last summary.
    Iterations,
    /// Idle past `provider_cache_ttl`, the provider's cache is cold, and the
    /// thread has come `precompute_at` of the way to its nearest trigger.
    ColdCache,
}

#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Verdict {
    pub should_summarize: bool,
    /// Why it is due; null when it is not.
    #[schema(inline, required = true)]
    pub trigger: Option<Trigger>,
    /// Messages after the summary (or all), the pinned prefix excluded.
    pub messages_since_summary: u64,
    /// The profile's `max_messages_before_summary`.
    #[schema(minimum = 1)]
    pub messages_threshold: u64,
    /// messages_since_summary / messages_threshold in percent, one decimal;
    /// may exceed 100.
    #[schema(minimum = 0)]
    pub messages_percent: f64,
    /// What the next request would send. With `source: provider` the
    /// provider's count of the thread; when a `summary` object leaves
    /// messages out, the difference (those messages, and the summary that
    /// replaces them) stays a local estimate, `exact` is false and a warning
    /// says so.
    pub total_tokens: u64,
    /// The profile's `max_tokens_before_summary`.
    #[schema(minimum = 1)]
    pub tokens_threshold: u64,
    /// total_tokens / tokens_threshold in percent, one decimal; may exceed 100.
    #[schema(minimum = 0)]
    pub tokens_percent: f64,
    /// The window used (the profile's, else the model's).
    #[schema(minimum = 1)]
    pub context_window: u64,
    /// Window minus `response_reserve` minus `total_tokens`; negative when over.
    pub available_tokens: i64,
    /// Distinct `metadata.iteration` values among the messages after the summary.
    pub iterations_since_summary: u64,
    /// The profile's `max_iterations_before_summary`; null when that rule is off.
    #[schema(required = true, minimum = 1)]
    pub iterations_threshold: Option<u64>,
    /// iterations_since_summary / iterations_threshold in percent, one
    /// decimal; null when the rule is off.
    #[schema(required = true, minimum = 0)]
    pub iterations_percent: Option<f64>,
    /// False when the count is an estimate: a calibrated count (a model
    /// without a published tokenizer), `method: chars`, another encoding than
    /// the model's, or parts the provider's formula does not cover.
    pub exact: bool,
    /// The summary the request carries (a summary message in the thread, or
    /// a `summary` object); null without one.
    #[schema(required = true)]
    pub last_summary: Option<LastSummary>,
    /// Tokens a new summary would take in (the messages after the last
    /// summary, the newest `min_recent_messages` aside).
    pub gain_tokens: u64,
    /// Tokens that can be compressed at all (the last summary and every
    /// message after it).
    pub compressible_tokens: u64,
    /// Why a trigger other than `context_window` that fired writes no
    /// summary (`gain_tokens` under `min_summary_gain` of
    /// `compressible_tokens`, or a summary that would not pay back within
    /// `max_payback_turns` under the model's prompt-cache prices), with the
    /// numbers: the previous summary stays, and so does the prefix the
    /// provider caches. Null otherwise.
    #[schema(required = true)]
    pub held_back: Option<String>,
    /// The model's prompt-cache prices the verdict was decided under (kept
    /// to decide again on the provider's count; not on the wire).
    #[serde(skip)]
    pub cache: CachePrices,
}

/// Applies the rules, in this order:
/// 1. over the window (minus the reply reserve): `context_window`, always;
/// 2. fewer than `min_recent_messages + 4` since the summary: nothing is due;
/// 3. idle past `provider_cache_ttl` and at least `precompute_at` of the way
///    to the nearest of N, K and iterations (both non-zero): `cold_cache`;
/// 4. `messages_since_summary >= N`: `messages`;
/// 5. `total_tokens >= K`: `tokens`;
/// 6. `iterations_since_summary >= max_iterations_before_summary` (when set): `iterations`.
///
/// A trigger but `context_window` and `cold_cache` (they pay at once) is
/// then held back when the summary would take in under `min_summary_gain`
/// of what can be compressed, or would not pay back within
/// `max_payback_turns` under the model's `cache` prices, its message
/// counted at its writer's bound.
pub fn decide(
    profile: &Profile,
    a: Assessment,
    context_window: u64,
    cache: CachePrices,
) -> Verdict {
    decide_knowing(profile, a, context_window, cache, |_| None)
}

/// [`decide`], where the caller can tell what the new summary's message
/// would take (`written`: its tokens for a summary due by that trigger, or
/// None): asked only when the bound would hold the summary back, so a
/// summary written to be weighed is written only when it may matter.
pub fn decide_knowing(
    profile: &Profile,
    a: Assessment,
    context_window: u64,
    cache: CachePrices,
    written: impl FnOnce(Trigger) -> Option<u64>,
) -> Verdict {
    let budget = context_window.saturating_sub(profile.response_reserve);
    let n = profile.max_messages_before_summary;
    let k = profile.max_tokens_before_summary;
    let its = profile.max_iterations_before_summary;
    let messages_percent = percent(a.messages_since_summary, n);
    let tokens_percent = percent(a.total_tokens, k);
    let iterations_percent = its.map(|m| percent(a.iterations_since_summary, m));
    // On a cold cache the provider writes the whole prefix again anyway: the
    // one turn a summary due soon costs no extra cache write.
    let ttl = profile.provider_cache_ttl.0;
    let cold = !ttl.is_zero() && a.idle.is_some_and(|idle| idle > ttl);
    let soon = profile.precompute_at > 0.0
        && nearest(messages_percent, tokens_percent, iterations_percent) >= profile.precompute_at;
    let trigger = if a.total_tokens > budget {
        Some(Trigger::ContextWindow)
    } else if a.messages_since_summary < profile.min_recent_messages + 4 {
        None
    } else if cold && soon {
        Some(Trigger::ColdCache)
    } else if a.messages_since_summary >= n {
        Some(Trigger::Messages)
    } else if a.total_tokens >= k {
        Some(Trigger::Tokens)
    } else if its.is_some_and(|m| a.iterations_since_summary >= m) {
        Some(Trigger::Iterations)
    } else {
        None
    };
    // No churn: a trigger that fires on a span too small to be worth a new
    // prefix (a K below the pinned prefix fires every turn) writes nothing.
    let held_back = trigger.filter(|t| !t.pays_at_once()).and_then(|t| {
        held_back(profile, &a, cache, || written(t)).map(|why| {
            format!(
                "a summary is due ({}), but {why}: the previous summary stays",
                t.as_str()
            )
        })
    });
    let trigger = trigger.filter(|_| held_back.is_none());
    Verdict {
        gain_tokens: a.gain_tokens,
        compressible_tokens: a.compressible_tokens,
        held_back,
        should_summarize: trigger.is_some(),
        trigger,
        messages_since_summary: a.messages_since_summary,
        messages_threshold: n,
        messages_percent,
        total_tokens: a.total_tokens,
        tokens_threshold: k,
        tokens_percent,
        context_window,
        available_tokens: budget as i64 - a.total_tokens as i64,
        iterations_since_summary: a.iterations_since_summary,
        iterations_threshold: its,
        iterations_percent,
        exact: a.exact,
        last_summary: None,
        cache,
    }
}

/// `v` decided again on the provider's count of the thread as sent. When a
/// `summary` object leaves messages out, `whole_thread` is the local count of
/// the whole thread, and the difference stays a local estimate (not exact).
pub fn with_provider_total(
    v: &Verdict,
    profile: &Profile,
    provider: u64,
    whole_thread: Option<u64>,
) -> Verdict {
    let total_tokens = match whole_thread {
        None => provider,
        Some(whole) => (provider + v.total_tokens).saturating_sub(whole),
    };
    let a = Assessment {
        messages_since_summary: v.messages_since_summary,
        iterations_since_summary: v.iterations_since_summary,
        total_tokens,
        exact: whole_thread.is_none(),
        gain_tokens: v.gain_tokens,
        compressible_tokens: v.compressible_tokens,
        summary_tokens: v.last_summary.as_ref().map_or(0, |s| s.tokens),
        // Stateless: the verdict of a count knows no clock.
        idle: None,
    };
    Verdict {
        last_summary: v.last_summary.clone(),
        ..decide(profile, a, v.context_window, v.cache)
    }
}

impl Verdict {
    /// How far the thread has come to its nearest trigger (messages, tokens
    /// or iterations; 1.0 is due): precompute and the cold-cache rule start
    /// at `precompute_at` of it.
    pub fn progress(&self) -> f64 {
        nearest(
            self.messages_percent,
            self.tokens_percent,
            self.iterations_percent,
        )
    }
}

/// The largest of the percentages, as a share.
fn nearest(messages: f64, tokens: f64, iterations: Option<f64>) -> f64 {
    messages.max(tokens).max(iterations.unwrap_or(0.0)) / 100.0
}

/// `used / threshold` in percent, one decimal.
fn percent(used: u64, threshold: u64) -> f64 {
    (used as f64 * 1000.0 / threshold as f64).round() / 10.0
}

#[cfg(test)]
#[path = "verdict_tests.rs"]
mod tests;
