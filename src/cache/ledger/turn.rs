//! One proxied turn and its bill, as the proxy writes it and a reader gets
//! it back.

use serde::Serialize;

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
