//! What the same turn would have been billed without condense: a model,
//! not a bill, from the turn as billed and the conversation's turn before
//! it (docs/proxy.md lists its assumptions).

use super::turn::{Bill, Turn};

/// The turn before, as the counterfactual needs it.
#[derive(Debug, Clone, Copy, PartialEq, sqlx::FromRow)]
pub struct Previous {
    /// Seconds since it was written, by the database's clock.
    pub age_secs: f64,
    /// The client's thread then, in the provider's tokens (its
    /// counterfactual input, every kind).
    pub client_tokens: i64,
}

/// How long a provider keeps a prefix by default (Anthropic's 5 minutes;
/// OpenAI keeps it 5 to 10 minutes of inactivity).
pub const CACHE_TTL_SECS: f64 = 300.0;
/// Anthropic's `ttl: "1h"`, when the turn wrote to it.
pub const CACHE_TTL_1H_SECS: f64 = 3600.0;
/// OpenAI caches prompts of this many tokens or more, by itself.
pub const OPENAI_MIN_CACHED: u64 = 1024;

/// The turn as the provider would have billed it had the client's own
/// thread gone unchanged, its prefix cached as the client's would have been:
///
/// - its input is the billed input scaled by the client's thread over what
///   was forwarded (both by condense's count), so the provider's tokenizer
///   is kept; the same as billed when nothing was removed;
/// - the previous turn's client thread is read from the cache when that turn
///   is within the cache lifetime (5 minutes; an hour when this turn wrote to
///   the hour-long cache) and the client caches at all: on Anthropic, when
///   this turn was billed any cache read or write (the client's
///   `cache_control` markers go through as they are); on OpenAI always, for
///   a prefix of 1,024 tokens or more (its automatic caching);
/// - the rest is, on Anthropic, the same uncached tail as billed and a cache
///   write (split between lifetimes as billed); on OpenAI, full-price input;
/// - output and reasoning are as billed.
pub fn without_condense(turn: &Turn, previous: Option<&Previous>) -> Bill {
    let b = &turn.bill;
    let billed = b.input_total();
    let client = match (turn.sent_tokens, turn.forwarded_tokens) {
        (Some(sent), Some(fwd)) if fwd > 0 && sent != fwd => {
            (billed as f64 * sent as f64 / fwd as f64).round() as u64
        }
        _ => billed,
    };
    let writes = b.cache_write_5m + b.cache_write_1h;
    let anthropic = turn.provider == "anthropic";
    let ttl = if b.cache_write_1h > 0 {
        CACHE_TTL_1H_SECS
    } else {
        CACHE_TTL_SECS
    };
    let cached = previous
        .filter(|p| p.age_secs <= ttl)
        .map_or(0, |p| u64::try_from(p.client_tokens).unwrap_or(0));
    let caches = if anthropic {
        b.cache_read + writes > 0
    } else {
        cached >= OPENAI_MIN_CACHED
    };
    let cache_read = if caches { cached.min(client) } else { 0 };
    let rest = client - cache_read;
    let (input, write) = match (anthropic, caches) {
        (true, true) => (b.input.min(rest), rest - b.input.min(rest)),
        _ => (rest, 0),
    };
    let write_1h = match writes {
        0 => 0,
        _ => (write as f64 * b.cache_write_1h as f64 / writes as f64).round() as u64,
    };
    Bill {
        input,
        cache_read,
        cache_write_5m: write - write_1h,
        cache_write_1h: write_1h,
        output: b.output,
        reasoning: b.reasoning,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(provider: &'static str, sent: u64, fwd: u64, bill: Bill) -> Turn {
        Turn {
            conversation: "c".into(),
            route: "/v1/messages",
            provider,
            model: None,
            sent_tokens: Some(sent),
            forwarded_tokens: Some(fwd),
            bill,
            dropped_items: 0,
            summary_call_tokens: None,
            reason: None,
        }
    }

    fn prev(age_secs: f64, client_tokens: i64) -> Previous {
        Previous {
            age_secs,
            client_tokens,
        }
    }

    #[test]
    fn a_turn_forwarded_as_sent_is_its_own_counterfactual() {
        let bill = Bill {
            input: 3,
            cache_read: 9_000,
            cache_write_5m: 1_200,
            output: 50,
            ..Bill::default()
        };
        let t = turn("anthropic", 8_000, 8_000, bill);
        assert_eq!(without_condense(&t, Some(&prev(20.0, 9_000))), bill);
        let bill = Bill {
            input: 500,
            cache_read: 2_048,
            output: 7,
            reasoning: 3,
            ..Bill::default()
        };
        let t = turn("openai", 2_000, 2_000, bill);
        assert_eq!(without_condense(&t, Some(&prev(20.0, 2_048))), bill);
    }

    #[test]
    fn a_compressed_turn_is_scaled_to_the_clients_thread_and_cached_as_it_was() {
        // Forwarded 1,000 of 10,000 tokens; the provider counted 1,100.
        let bill = Bill {
            input: 4,
            cache_read: 896,
            cache_write_5m: 200,
            output: 30,
            ..Bill::default()
        };
        let t = turn("anthropic", 10_000, 1_000, bill);
        // The client's 11,000: 9,500 read from the last turn, the same tail.
        let warm = without_condense(&t, Some(&prev(60.0, 9_500)));
        assert_eq!(
            warm,
            Bill {
                input: 4,
                cache_read: 9_500,
                cache_write_5m: 1_496,
                output: 30,
                ..Bill::default()
            }
        );
        // Idle past the lifetime: all of it written again.
        let cold = without_condense(&t, Some(&prev(301.0, 9_500)));
        assert_eq!((cold.cache_read, cold.cache_write_5m), (0, 10_996));
        // A client that never caches pays it all at the full price.
        let plain = Bill {
            input: 1_100,
            output: 30,
            ..Bill::default()
        };
        let t = turn("anthropic", 10_000, 1_000, plain);
        let never = without_condense(&t, Some(&prev(60.0, 9_500)));
        assert_eq!((never.input, never.cache_read), (11_000, 0));
        // OpenAI: the rest at the full price, a short prefix not cached.
        let t = turn("openai", 10_000, 1_000, plain);
        let warm = without_condense(&t, Some(&prev(60.0, 9_500)));
        assert_eq!((warm.input, warm.cache_read), (1_500, 9_500));
        let short = without_condense(&t, Some(&prev(60.0, 1_000)));
        assert_eq!((short.input, short.cache_read), (11_000, 0));
    }

    #[test]
    fn the_hour_long_cache_keeps_the_prefix_and_takes_its_share_of_writes() {
        let bill = Bill {
            cache_write_5m: 100,
            cache_write_1h: 300,
            ..Bill::default()
        };
        let t = turn("anthropic", 800, 400, bill);
        let cf = without_condense(&t, Some(&prev(1_800.0, 400)));
        assert_eq!(
            (cf.cache_read, cf.cache_write_5m, cf.cache_write_1h),
            (400, 100, 300)
        );
    }
}
