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
