//! A conversation's ledger as `GET /v1/conversations/{id}` answers it: its
//! turns as the provider billed them and as it would have billed them
//! without condense (`cache::without_condense`), and the totals.

use serde::Serialize;

use super::super::Proxy;
use crate::cache::{Bill, CacheError, Recorded};

/// One proxied turn.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LedgerTurn {
    /// When its answer ended (RFC 3339, UTC, the database's clock).
    pub at: String,
    /// The route the client called.
    #[schema(example = "/v1/messages")]
    pub route: &'static str,
    /// The provider API: `anthropic`, `openai` (Chat Completions) or `responses`.
    pub provider: &'static str,
    /// As the provider's answer names it.
    pub model: Option<String>,
    /// The client's thread, by condense's count (`x-condense-tokens-before`);
    /// null when condense did not read it.
    pub sent_tokens: Option<u64>,
    /// What was forwarded, by the same count (`x-condense-tokens-after`).
    pub forwarded_tokens: Option<u64>,
    /// What the provider billed, from its own `usage`.
    pub billed: Bill,
    /// The client's own thread as the provider would have billed it.
    pub without_condense: Bill,
    /// Items the provider says it dropped (`input_transformations`).
    pub dropped_items: u64,
    /// The summarizer's tokens on this turn (0: a summary from the cache;
    /// null: no summary in play).
    pub summary_call_tokens: Option<u64>,
    /// Why condense compressed the thread: the compression's `reason`
    /// (`cold_cache`, `messages`, `continued`...); null when it went as sent.
    #[schema(example = "cold_cache")]
    pub reason: Option<String>,
}

/// Billed with condense minus without, kind by kind: negative is saved.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Difference {
    pub input: i64,
    pub cache_read: i64,
    pub cache_write_5m: i64,
    pub cache_write_1h: i64,
    pub output: i64,
    /// Every input token, however billed.
    pub input_total: i64,
}

/// The conversation's sums.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LedgerTotals {
    pub turns: usize,
    pub billed: Bill,
    pub without_condense: Bill,
    pub difference: Difference,
    /// The summarizer's tokens, every turn's (its own bill, not the provider's).
    pub summary_call_tokens: u64,
}

/// A conversation's ledger, in tokens (the models file gives no prices).
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Ledger {
    /// `x-condense-conversation`.
    pub conversation: String,
    /// Oldest first.
    pub turns: Vec<LedgerTurn>,
    pub totals: LedgerTotals,
}

impl Ledger {
    /// The ledger of `conversation`'s turns (None without one).
    pub fn of(conversation: &str, recorded: Vec<Recorded>) -> Option<Ledger> {
        if recorded.is_empty() {
            return None;
        }
        let turns: Vec<LedgerTurn> = recorded
            .into_iter()
            .map(|r| LedgerTurn {
                at: r.at,
                route: r.turn.route,
                provider: r.turn.provider,
                model: r.turn.model,
                sent_tokens: r.turn.sent_tokens,
                forwarded_tokens: r.turn.forwarded_tokens,
                billed: r.turn.bill,
                without_condense: r.without_condense,
                dropped_items: r.turn.dropped_items,
                summary_call_tokens: r.turn.summary_call_tokens,
                reason: r.turn.reason,
            })
            .collect();
        let billed = sum(turns.iter().map(|t| &t.billed));
        let without_condense = sum(turns.iter().map(|t| &t.without_condense));
        let d = |a: u64, b: u64| a as i64 - b as i64;
        let (b, w) = (&billed, &without_condense);
        let totals = LedgerTotals {
            turns: turns.len(),
            difference: Difference {
                input: d(b.input, w.input),
                cache_read: d(b.cache_read, w.cache_read),
                cache_write_5m: d(b.cache_write_5m, w.cache_write_5m),
                cache_write_1h: d(b.cache_write_1h, w.cache_write_1h),
                output: d(b.output, w.output),
                input_total: d(b.input_total(), w.input_total()),
            },
            billed,
            without_condense,
            summary_call_tokens: turns.iter().filter_map(|t| t.summary_call_tokens).sum(),
        };
        Some(Ledger {
            conversation: conversation.to_string(),
            turns,
            totals,
        })
    }
}

fn sum<'a>(bills: impl Iterator<Item = &'a Bill>) -> Bill {
    bills.fold(Bill::default(), |a, b| Bill {
        input: a.input + b.input,
        cache_read: a.cache_read + b.cache_read,
        cache_write_5m: a.cache_write_5m + b.cache_write_5m,
        cache_write_1h: a.cache_write_1h + b.cache_write_1h,
        output: a.output + b.output,
        reasoning: a.reasoning + b.reasoning,
    })
}

impl Proxy {
    /// Whether turns are kept: in the summary cache, which may be off.
    pub fn keeps_ledger(&self) -> bool {
        !matches!(
            self.compressor.summarizer().cache(),
            crate::cache::Cache::Off
        )
    }

    /// The ledger of `conversation`, or None when it has no turn on record.
    pub async fn ledger(&self, conversation: &str) -> Result<Option<Ledger>, CacheError> {
        let cache = self.compressor.summarizer().cache();
        Ok(Ledger::of(conversation, cache.turns(conversation).await?))
    }
}
