//! The ledger: what the provider billed for each proxied turn, kept with
//! the summaries (so every replica reads one ledger, pruned as they are),
//! and what the same turn would have been billed without condense.
//!
//! The counterfactual is written with the turn, from the turn before it,
//! so a reader needs no more than the rows ([`without_condense`] says how).

use serde::Serialize;
use sqlx::{Encode, Executor, FromRow, IntoArguments, Type};

use super::CacheError;
use super::store::{Dialect, Store, secs};

/// What a provider billed for one answer, in tokens (or, for the turn as it
/// would have gone without condense, would have billed).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Bill {
    /// Input billed at the full price (not read from or written to the cache).
    pub input: u64,
    pub cache_read: u64,
    /// Written to the cache for 5 minutes (Anthropic; OpenAI bills no writes).
    pub cache_write_5m: u64,
    /// Written to the cache for an hour (Anthropic's `ttl: "1h"`).
    pub cache_write_1h: u64,
    /// Output, reasoning included.
    pub output: u64,
    /// The part of `output` spent reasoning, where the provider says.
    pub reasoning: u64,
}

impl Bill {
    /// Every input token, however billed.
    pub fn input_total(&self) -> u64 {
        self.input + self.cache_read + self.cache_write_5m + self.cache_write_1h
    }
}

/// One proxied turn, as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Turn {
    /// `x-condense-conversation`.
    pub conversation: String,
    /// The route the client called (`/v1/messages`).
    pub route: &'static str,
    /// `anthropic`, `openai` or `responses` (the wire format).
    pub provider: &'static str,
    /// As the provider's answer names it.
    pub model: Option<String>,
    /// The client's thread, by condense's count (`x-condense-tokens-before`).
    pub sent_tokens: Option<u64>,
    /// What was forwarded, by the same count (`x-condense-tokens-after`).
    pub forwarded_tokens: Option<u64>,
    pub bill: Bill,
    /// Items the provider says it dropped (`input_transformations`).
    pub dropped_items: u64,
    /// The summarizer's tokens on this turn (None: no summary in play).
    pub summary_call_tokens: Option<u64>,
    /// Why condense compressed the thread (`cold_cache`); None: sent as it came.
    pub reason: Option<String>,
}

/// A turn as read back: when it was written, and its counterfactual.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    /// RFC 3339, UTC, by the database's clock.
    pub at: String,
    pub turn: Turn,
    pub without_condense: Bill,
}

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

/// A ledger row as the database holds it.
#[derive(Debug, sqlx::FromRow)]
pub struct Row {
    at: String,
    route: String,
    provider: String,
    model: Option<String>,
    sent_tokens: Option<i64>,
    forwarded_tokens: Option<i64>,
    input: i64,
    cache_read: i64,
    cache_write_5m: i64,
    cache_write_1h: i64,
    output: i64,
    reasoning: i64,
    dropped_items: i64,
    summary_call_tokens: Option<i64>,
    reason: Option<String>,
    cf_input: i64,
    cf_cache_read: i64,
    cf_cache_write_5m: i64,
    cf_cache_write_1h: i64,
}

const ROW: &str = "route, provider, model, sent_tokens, forwarded_tokens, input, cache_read, \
                   cache_write_5m, cache_write_1h, output, reasoning, dropped_items, \
                   summary_call_tokens, reason, cf_input, cf_cache_read, cf_cache_write_5m, \
                   cf_cache_write_1h";

fn n(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

fn u(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

/// A name the table holds, for a `&'static str` field (unknown ones read as `other`).
fn known(v: &str, names: &[&'static str]) -> &'static str {
    names.iter().find(|n| **n == v).copied().unwrap_or("other")
}

/// The routes and providers a row may name.
const ROUTES: &[&str] = &["/v1/chat/completions", "/v1/responses", "/v1/messages"];
const PROVIDERS: &[&str] = &["anthropic", "openai", "responses"];

impl Row {
    fn recorded(self, conversation: &str) -> Recorded {
        Recorded {
            at: self.at,
            turn: Turn {
                conversation: conversation.to_string(),
                route: known(&self.route, ROUTES),
                provider: known(&self.provider, PROVIDERS),
                model: self.model,
                sent_tokens: self.sent_tokens.map(u),
                forwarded_tokens: self.forwarded_tokens.map(u),
                bill: Bill {
                    input: u(self.input),
                    cache_read: u(self.cache_read),
                    cache_write_5m: u(self.cache_write_5m),
                    cache_write_1h: u(self.cache_write_1h),
                    output: u(self.output),
                    reasoning: u(self.reasoning),
                },
                dropped_items: u(self.dropped_items),
                summary_call_tokens: self.summary_call_tokens.map(u),
                reason: self.reason,
            },
            without_condense: Bill {
                input: u(self.cf_input),
                cache_read: u(self.cf_cache_read),
                cache_write_5m: u(self.cf_cache_write_5m),
                cache_write_1h: u(self.cf_cache_write_1h),
                output: u(self.output),
                reasoning: u(self.reasoning),
            },
        }
    }
}

impl<DB: Dialect> Store<DB>
where
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'q> DB::Arguments<'q>: IntoArguments<'q, DB>,
    DB::Connection: sqlx::migrate::Migrate,
    super::CachedSummary: for<'r> FromRow<'r, DB::Row>,
    Row: for<'r> FromRow<'r, DB::Row>,
    Previous: for<'r> FromRow<'r, DB::Row>,
    for<'q> &'q str: Encode<'q, DB> + Type<DB>,
    for<'q> Option<&'q str>: Encode<'q, DB> + Type<DB>,
    for<'q> i64: Encode<'q, DB> + Type<DB>,
    for<'q> Option<i64>: Encode<'q, DB> + Type<DB>,
    for<'q> f64: Encode<'q, DB> + Type<DB>,
{
    /// Appends `turn` to its conversation's ledger, with its counterfactual
    /// from the conversation's last turn (one connection, two statements:
    /// a conversation's turns come one after another).
    pub async fn append_turn(&self, turn: &Turn) -> Result<(), CacheError> {
        let last = last_turn::<DB>();
        let insert = format!(
            "INSERT INTO ledger (conversation, at, {ROW}) VALUES ($1, {}, $2, $3, $4, $5, $6, \
                 $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)",
            DB::NOW
        );
        let opt = |v: Option<u64>| v.map(n);
        self.call(async {
            let mut conn = self.pool.acquire().await?;
            let previous: Option<Previous> = sqlx::query_as(&last)
                .bind(turn.conversation.as_str())
                .fetch_optional(&mut *conn)
                .await?;
            let (b, cf) = (&turn.bill, without_condense(turn, previous.as_ref()));
            sqlx::query(&insert)
                .bind(turn.conversation.as_str())
                .bind(turn.route)
                .bind(turn.provider)
                .bind(turn.model.as_deref())
                .bind(opt(turn.sent_tokens))
                .bind(opt(turn.forwarded_tokens))
                .bind(n(b.input))
                .bind(n(b.cache_read))
                .bind(n(b.cache_write_5m))
                .bind(n(b.cache_write_1h))
                .bind(n(b.output))
                .bind(n(b.reasoning))
                .bind(n(turn.dropped_items))
                .bind(opt(turn.summary_call_tokens))
                .bind(turn.reason.as_deref())
                .bind(n(cf.input))
                .bind(n(cf.cache_read))
                .bind(n(cf.cache_write_5m))
                .bind(n(cf.cache_write_1h))
                .execute(&mut *conn)
                .await
                .map(|_| ())
        })
        .await
    }

    /// Seconds since `conversation`'s latest turn was written, by the
    /// database's clock (so every replica reads one clock); None without one.
    pub async fn idle_secs(&self, conversation: &str) -> Result<Option<f64>, CacheError> {
        let sql = last_turn::<DB>();
        let q = sqlx::query_as::<_, Previous>(&sql).bind(conversation);
        let last = self.call(q.fetch_optional(&self.pool)).await?;
        Ok(last.map(|p| p.age_secs))
    }

    /// The unexpired turns of `conversation`, oldest first.
    pub async fn turns(&self, conversation: &str) -> Result<Vec<Recorded>, CacheError> {
        let sql = format!(
            "SELECT {} AS at, {ROW} FROM ledger \
             WHERE conversation = $1 AND at > {} - {} ORDER BY id",
            DB::rfc3339("at"),
            DB::NOW,
            DB::secs("$2")
        );
        let q = sqlx::query_as::<_, Row>(&sql)
            .bind(conversation)
            .bind(secs(self.opts.ttl));
        let rows = self.call(q.fetch_all(&self.pool)).await?;
        Ok(rows.into_iter().map(|r| r.recorded(conversation)).collect())
    }
}

/// The latest turn of the conversation bound as `$1`, as [`Previous`].
fn last_turn<DB: Dialect>() -> String {
    format!(
        "SELECT {} AS age_secs, cf_input + cf_cache_read + cf_cache_write_5m \
             + cf_cache_write_1h AS client_tokens \
         FROM ledger WHERE conversation = $1 ORDER BY id DESC LIMIT 1",
        DB::age_secs("at")
    )
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
