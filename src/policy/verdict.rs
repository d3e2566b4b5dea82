//! The verdict: should this thread be summarized now, and the numbers behind it.

use serde::Serialize;

use super::Profile;
use super::assess::{Assessment, assess};
use super::payback::Payback;
use crate::thread::{Message, Part, Role, Thread, summary_text};
use crate::tokens::{CachePrices, Counter};

/// The summary a previous compression returned, as far as the verdict needs it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PriorSummary {
    /// The last index of `messages` the summary covers.
    pub last_message_idx: usize,
    pub content: Option<String>,
    pub token_count: Option<u64>,
    /// How many messages it stands for (compression extends the count).
    pub messages_summarized: Option<u64>,
    /// When it was written, as the summary object said.
    pub created_at: Option<String>,
}

impl PriorSummary {
    /// The messages it replaced: as it said, else every message of
    /// `thread` it covers after the pinned prefix but the instructions
    /// (kept verbatim after a summary, so not replaced by it). The `N` of
    /// its header, for the verdict and compression alike.
    pub fn replaced(&self, thread: &Thread) -> usize {
        self.messages_summarized.map_or_else(
            || {
                let pinned = thread.pinned_len();
                let end = (self.last_message_idx + 1).min(thread.messages.len());
                thread.messages.get(pinned..end).map_or(0, |span| {
                    span.iter().filter(|m| !m.is_instruction()).count()
                })
            },
            |n| n as usize,
        )
    }

    /// What the summary costs as a message in the next request.
    fn tokens(&self, counter: &Counter<'_>, thread: &Thread) -> u64 {
        let covered = self.replaced(thread);
        match (&self.content, self.token_count) {
            (Some(text), _) => summary_message_tokens(counter, covered, text),
            // Without the text, its reported size plus the header and a user message's framing.
            (None, Some(n)) => n + summary_message_tokens(counter, covered, ""),
            (None, None) => 0,
        }
    }
}

/// What the summary message (header and content, as a user message) costs in
/// the next request: the verdict and compression price it the same way.
pub fn summary_message_tokens(counter: &Counter<'_>, covered: usize, content: &str) -> u64 {
    let m = Message {
        role: Role::User,
        name: None,
        parts: vec![Part::Text(summary_text(covered, content))],
        plain: true,
        iteration: None,
        raw: serde_json::Value::Null,
    };
    counter.message(&m).tokens as u64
}

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

/// Why a due summary is not worth writing, if it is not: too small a share
/// (no churn), or it would not pay back in time (see [`Payback`]): at its
/// writer's bound, and then as `written`, where that is known and could
/// make a difference.
fn held_back(
    profile: &Profile,
    a: &Assessment,
    cache: CachePrices,
    written: impl FnOnce() -> Option<u64>,
) -> Option<String> {
    let gain = profile.min_summary_gain;
    if gain > 0.0 && (a.gain_tokens as f64) < gain * a.compressible_tokens as f64 {
        return Some(format!(
            "it would take in only {} of the {} compressible tokens (under min_summary_gain {gain})",
            a.gain_tokens, a.compressible_tokens
        ));
    }
    let turns = profile.max_payback_turns;
    let bound = Payback::estimate(a, profile.max_summary_tokens, cache);
    if bound.pays_within(turns) {
        return None;
    }
    // Not even an empty summary would pay: none is written to be weighed.
    let may_pay = Payback::of(a, 0, cache).pays_within(turns);
    let (p, leaves) = match may_pay.then(written).flatten() {
        Some(summary) => (
            Payback::of(a, summary, cache),
            "with its summary as written, it leaves",
        ),
        None => (bound, "it leaves about"),
    };
    if p.pays_within(turns) {
        return None;
    }
    let when = match p.turns() {
        Some(n) => format!("pays back after {n:.1} later turns"),
        None => "never pays back".into(),
    };
    Some(format!(
        "it would not pay for itself: {leaves} {} of the {} compressible tokens (r = {:.2}); under the model's prompt-cache prices (read {}x, write {}x the input price) it costs {:.0} more tokens' worth on this turn than reading the cached prefix and saves {:.0} on each later turn: it {when}, over max_payback_turns {turns}",
        p.after,
        p.before,
        p.ratio(),
        cache.read,
        cache.write,
        p.extra,
        p.saving,
    ))
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
mod tests {
    use super::*;
    use std::time::Duration;

    fn at(since: u64, total: u64) -> Verdict {
        let p = Profile {
            max_messages_before_summary: 30,
            max_tokens_before_summary: 1000,
            min_recent_messages: 6,
            response_reserve: 100,
            ..Profile::default()
        };
        decide(
            &p,
            Assessment {
                messages_since_summary: since,
                iterations_since_summary: 0,
                total_tokens: total,
                exact: true,
                gain_tokens: total,
                compressible_tokens: total,
                summary_tokens: 0,
                idle: None,
            },
            2000,
            CachePrices::NONE,
        )
    }

    #[test]
    fn a_cold_cache_writes_a_summary_due_soon_that_no_gate_holds_back() {
        let p = Profile {
            max_messages_before_summary: 30,
            max_tokens_before_summary: 1000,
            min_recent_messages: 6,
            response_reserve: 100,
            min_summary_gain: 0.9,
            ..Profile::default()
        };
        let assessed = |since: u64, idle: u64| Assessment {
            messages_since_summary: since,
            iterations_since_summary: 0,
            total_tokens: 10,
            exact: true,
            gain_tokens: 1,
            compressible_tokens: 10,
            summary_tokens: 0,
            idle: Some(Duration::from_secs(idle)),
        };
        let at = |since: u64, idle: u64| decide(&p, assessed(since, idle), 2000, CachePrices::NONE);
        // 24 of 30 messages is 0.8 of the way: due soon.
        assert_eq!(at(24, 301).trigger, Some(Trigger::ColdCache));
        assert!(at(24, 301).should_summarize && at(24, 301).held_back.is_none());
        // Warm, or not due soon: nothing.
        assert_eq!(at(24, 300).trigger, None);
        assert_eq!(at(23, 3600).trigger, None);
        // Due anyway on a cold turn: the gain gate does not hold it back.
        assert_eq!(at(30, 301).trigger, Some(Trigger::ColdCache));
        assert!(at(30, 299).held_back.is_some());
        // `0s`, or precompute off, turns the rule off.
        let ttl_zero = Profile {
            provider_cache_ttl: super::super::duration::Period(Duration::ZERO),
            ..p.clone()
        };
        assert_eq!(
            decide(&ttl_zero, assessed(24, 3600), 2000, CachePrices::NONE).trigger,
            None
        );
        let no_precompute = Profile {
            precompute_at: 0.0,
            ..p.clone()
        };
        assert_eq!(
            decide(&no_precompute, assessed(24, 3600), 2000, CachePrices::NONE).trigger,
            None
        );
    }

    #[test]
    fn boundaries() {
        assert_eq!(at(29, 10).trigger, None);
        assert_eq!(at(30, 10).trigger, Some(Trigger::Messages));
        assert_eq!(at(10, 999).trigger, None);
        assert_eq!(at(10, 1000).trigger, Some(Trigger::Tokens));
        // Below min_recent + 4 nothing is due, even past K...
        assert_eq!(at(9, 1500).trigger, None);
        // ...unless the next call would not fit at all.
        assert_eq!(at(9, 1900).trigger, None);
        assert_eq!(at(9, 1901).trigger, Some(Trigger::ContextWindow));
        assert_eq!(at(9, 1901).available_tokens, -1);
    }

    #[test]
    fn a_provider_total_decides_again() {
        let p = Profile {
            max_tokens_before_summary: 1000,
            min_recent_messages: 6,
            response_reserve: 100,
            ..Profile::default()
        };
        let local = at(10, 500);
        let v = with_provider_total(&local, &p, 1200, None);
        assert_eq!((v.total_tokens, v.exact), (1200, true));
        assert_eq!(v.trigger, Some(Trigger::Tokens));
        assert_eq!(v.available_tokens, 2000 - 100 - 1200);
        // A summary object left 300 local tokens out of the 800 of the thread.
        let v = with_provider_total(&local, &p, 900, Some(800));
        assert_eq!((v.total_tokens, v.exact), (600, false));
        assert_eq!(v.trigger, None);
    }

    /// A thread due by its messages: `compressible` tokens after a 500-token
    /// pinned prefix, the newest 3,000 kept, under `model`'s cache prices.
    fn due_on(model: &str, compressible: u64) -> Verdict {
        let registry = crate::tokens::ModelRegistry::embedded();
        let cache = registry.resolve(model, "gpt-4o").0.cache_prices();
        let a = Assessment {
            messages_since_summary: 40,
            iterations_since_summary: 0,
            total_tokens: 500 + compressible,
            exact: true,
            gain_tokens: compressible - 3_000,
            compressible_tokens: compressible,
            summary_tokens: 0,
            idle: None,
        };
        decide(&Profile::default(), a, 200_000, cache)
    }

    #[test]
    fn a_summary_waits_until_it_pays_under_the_model_s_cache() {
        // 20,000 tokens to 3,000 kept + a 2,000-token summary: r = 0.25.
        // gpt-4o (read 0.5x, no write premium) gains on the summary's own
        // turn; Claude (write 1.25x, read 0.1x) would need 2.8 later turns.
        let openai = due_on("gpt-4o", 20_000);
        assert_eq!(openai.trigger, Some(Trigger::Messages));
        assert_eq!(openai.held_back, None);
        let claude = due_on("claude-sonnet-4-5", 20_000);
        assert!(!claude.should_summarize);
        assert_eq!(claude.trigger, None);
        assert_eq!(
            claude.held_back.as_deref(),
            Some(
                "a summary is due (messages), but it would not pay for itself: it leaves about 5000 of the 20000 compressible tokens (r = 0.25); under the model's prompt-cache prices (read 0.1x, write 1.25x the input price) it costs 4250 more tokens' worth on this turn than reading the cached prefix and saves 1500 on each later turn: it pays back after 2.8 later turns, over max_payback_turns 0: the previous summary stays"
            )
        );
        // From r = c / w = 0.08 (62,500 tokens) it pays at once on Claude too.
        assert_eq!(due_on("claude-sonnet-4-5", 62_499).trigger, None);
        assert_eq!(
            due_on("claude-sonnet-4-5", 62_500).trigger,
            Some(Trigger::Messages)
        );
        // gpt-5 reads at 0.1x without a write premium: r = 0.1 is its boundary.
        assert_eq!(due_on("gpt-5", 49_999).trigger, None);
        assert_eq!(due_on("gpt-5", 50_000).trigger, Some(Trigger::Messages));
    }

    #[test]
    fn a_summary_known_as_written_is_weighed_as_written() {
        let claude = crate::tokens::ModelRegistry::embedded()
            .resolve("claude-sonnet-4-5", "gpt-4o")
            .0
            .cache_prices();
        // 40,000 tokens, the newest 3,000 kept: at its bound (2,000) the
        // summary leaves 5,000 and costs 6,250 - 4,000 = 2,250 more.
        let a = Assessment {
            messages_since_summary: 40,
            iterations_since_summary: 0,
            total_tokens: 40_500,
            exact: true,
            gain_tokens: 37_000,
            compressible_tokens: 40_000,
            summary_tokens: 0,
            idle: None,
        };
        let p = Profile::default();
        let knowing = |n: Option<u64>| decide_knowing(&p, a, 200_000, claude, |_| n);
        assert_eq!(knowing(None).trigger, None);
        // Written in 200 tokens it leaves 3,200: 4,000 - 4,000, it pays at once.
        assert_eq!(knowing(Some(200)).trigger, Some(Trigger::Messages));
        let v = knowing(Some(201));
        assert_eq!(v.trigger, None);
        assert_eq!(
            v.held_back.as_deref(),
            Some(
                "a summary is due (messages), but it would not pay for itself: with its summary as written, it leaves 3201 of the 40000 compressible tokens (r = 0.08); under the model's prompt-cache prices (read 0.1x, write 1.25x the input price) it costs 1 more tokens' worth on this turn than reading the cached prefix and saves 3680 on each later turn: it pays back after 0.0 later turns, over max_payback_turns 0: the previous summary stays"
            )
        );
        // Not asked when the bound pays, when the share gate holds it back,
        // nor when the kept messages alone leave too much for any summary.
        let unasked = |_| -> Option<u64> { panic!("asked for the summary's size") };
        let openai = CachePrices {
            read: 0.5,
            write: 1.0,
        };
        assert!(decide_knowing(&p, a, 200_000, openai, unasked).should_summarize);
        let small = Assessment {
            gain_tokens: 1_000,
            ..a
        };
        assert!(
            decide_knowing(&p, small, 200_000, claude, unasked)
                .held_back
                .is_some()
        );
        // 3,201 kept of 40,000: 4,001.25 written against 4,000 read.
        let kept = Assessment {
            gain_tokens: 36_799,
            ..a
        };
        let v = decide_knowing(&p, kept, 200_000, claude, unasked);
        assert!(
            v.held_back
                .unwrap()
                .contains("it leaves about 5201 of the 40000")
        );
    }

    #[test]
    fn max_payback_turns_allows_a_later_payback_and_the_window_always_wins() {
        let mut a = Assessment {
            messages_since_summary: 40,
            iterations_since_summary: 0,
            total_tokens: 20_500,
            exact: true,
            gain_tokens: 17_000,
            compressible_tokens: 20_000,
            summary_tokens: 0,
            idle: None,
        };
        let claude = crate::tokens::ModelRegistry::embedded()
            .resolve("claude-sonnet-4-5", "gpt-4o")
            .0
            .cache_prices();
        let within = |turns| Profile {
            max_payback_turns: turns,
            ..Profile::default()
        };
        // X = 4,250, D = 1,500: 2.8 turns.
        assert_eq!(decide(&within(2), a, 200_000, claude).trigger, None);
        assert_eq!(
            decide(&within(3), a, 200_000, claude).trigger,
            Some(Trigger::Messages)
        );
        // Over the window it is written whatever it costs.
        a.total_tokens = 200_000;
        let v = decide(&within(0), a, 200_000, claude);
        assert_eq!(
            (v.trigger, v.held_back),
            (Some(Trigger::ContextWindow), None)
        );
    }

    #[test]
    fn min_summary_gain_is_said_first() {
        let a = Assessment {
            messages_since_summary: 40,
            iterations_since_summary: 0,
            total_tokens: 20_500,
            exact: true,
            gain_tokens: 1_000,
            compressible_tokens: 20_000,
            summary_tokens: 0,
            idle: None,
        };
        let v = decide(&Profile::default(), a, 200_000, CachePrices::NONE);
        assert_eq!(
            v.held_back.as_deref(),
            Some(
                "a summary is due (messages), but it would take in only 1000 of the 20000 compressible tokens (under min_summary_gain 0.2): the previous summary stays"
            )
        );
    }

    #[test]
    fn percentages_are_of_thresholds_and_may_exceed_100() {
        let v = at(45, 500);
        assert_eq!(v.messages_percent, 150.0);
        assert_eq!(v.tokens_percent, 50.0);
    }
}
