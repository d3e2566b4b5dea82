//! A profile: the thresholds one agent runs with. A file profile or a
//! request's `config` names only the fields it changes; unknown fields are
//! rejected, since a typo falling back to a default is the worst bug here.

use serde::{Deserialize, Serialize};

use super::clear::{ClearOverrides, ClearSettings};
use super::duration::Period;
use super::overlay::{Overlay, replaced, settings};
use super::strategy::Strategy;
use crate::thread::FieldError;
use crate::tokens::CountSpec;
use crate::upstream::CountSource;

settings! {
    /// The thresholds and budgets one agent runs with.
    Profile;
    /// Single-field overrides of a profile: what a file profile or a
    /// request's `config` changes. Unknown fields are rejected; a value
    /// outside its bounds is a 422 at `/config/<field>`. Integers must be
    /// written without a fraction or exponent (`5`, not `5.0`); null leaves
    /// the profile's value.
    ProfileOverrides;
    /// N: summarize when this many messages came since the last summary.
    max_messages_before_summary: u64 = 30, 1 ..= 1_000_000;
    /// K: summarize when what would be sent reaches this many tokens.
    max_tokens_before_summary: u64 = 128_000, 1 ..= 100_000_000;
    /// Newest messages always kept verbatim; nothing is due below this + 4.
    min_recent_messages: u64 = 6, 0 ..= 10_000;
    /// Tokens left free in the window for the model's reply.
    response_reserve: u64 = 4096, 0 ..= 10_000_000;
    /// Upper bound of a summary's size.
    max_summary_tokens: u64 = 2000, 16 ..= 1_000_000;
    /// Overrides the model's window; absent when not set.
    #[serde(skip_serializing_if = "Option::is_none")]
    context_window: Option<u64> as u64 = None, 256 ..= 100_000_000;
    summary_role: SummaryRole = SummaryRole::User;
    /// `auto` compression uses the upstream LLM only for spans of at least
    /// this many tokens...
    llm_min_tokens: u64 = 4000, 0 ..= 100_000_000;
    /// ...and only when the whole thread (what the verdict counts) has at
    /// least this many tokens: a tier by the thread's total, heuristic
    /// below, LLM above.
    llm_min_total_tokens: u64 = 0, 0 ..= 100_000_000;
    on_upstream_error: OnUpstreamError = OnUpstreamError::Fallback;
    /// Who writes the summary, as `/v1/compress`'s `summarizer.strategy`
    /// (whose explicit value wins there): the proxy's only way to choose
    /// one. `provider` on the proxy compacts with the conversation's own
    /// provider and credentials; a thread not in the Responses format goes
    /// per `on_upstream_error`. It shapes the summary, so it is part of the
    /// continuity key (written out only when not `auto`).
    #[serde(skip_serializing_if = "Strategy::is_auto")]
    strategy: Strategy = Strategy::Auto;
    /// Also due when this many agent iterations (distinct
    /// `metadata.iteration`) came since the last summary (trigger
    /// `iterations`); absent: off.
    #[serde(skip_serializing_if = "Option::is_none")]
    max_iterations_before_summary: Option<u64> as u64 = None, 1 ..= 1_000_000;
    /// Count with `ceil(characters / chars_per_token)` instead of the
    /// tokenizer (an agent's own estimator, e.g. 3.5 or 4), for the
    /// triggers, the budget and the reported counts (`exact: false`);
    /// absent: the tokenizer. A request's `method` / `chars_per_token` win.
    #[serde(skip_serializing_if = "Option::is_none")]
    chars_per_token: Option<f64> as f64 = None, 0.5 ..= 20;
    /// Per-message rule: each text of a tool result kept verbatim (its
    /// string content, or each text part or block) is cut to at most this
    /// many characters, marker included (reported in `messages_truncated`;
    /// applied even when nothing is due, then `reason: rules`); absent: off.
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tool_result_chars: Option<u64> as u64 = None, 64 ..= 100_000_000;
    /// Per-message rule, as `max_tool_result_chars`, for the text of user
    /// messages (never the system prompt or the summary message).
    #[serde(skip_serializing_if = "Option::is_none")]
    max_user_message_chars: Option<u64> as u64 = None, 64 ..= 100_000_000;
    /// Per-message rule, as `max_tool_result_chars`, for the text of
    /// assistant messages (an agent's outputs; never their tool calls or
    /// thinking).
    #[serde(skip_serializing_if = "Option::is_none")]
    max_assistant_message_chars: Option<u64> as u64 = None, 64 ..= 100_000_000;
    truncate_keep: TruncateKeep = TruncateKeep::Both;
    count: CountSource = CountSource::Local;
    /// Tool-result clearing before any summary; absent: off. An override
    /// merges field by field.
    #[serde(skip_serializing_if = "Option::is_none")]
    clear: Option<ClearSettings> as ClearOverrides = None;
    /// No churn: a summary due by N, K or iterations is written only when it
    /// would take in at least this share of what can be compressed (the
    /// summary and the messages after it, the newest `min_recent_messages`
    /// aside); otherwise the previous summary and the byte-identical prefix
    /// stay, and the verdict says why in `held_back`. 0 writes one whenever
    /// a trigger fires.
    min_summary_gain: f64 = 0.2, 0 ..= 1;
    /// A summary only when it pays: a summary due by N, K or iterations is
    /// written only when the extra its turn costs under the model's
    /// prompt-cache prices (a rewritten prefix written at `cache_write`
    /// instead of read at `cache_read`; `data/models.toml`) is paid back by
    /// the reads it saves within this many later turns; otherwise the
    /// verdict says why in `held_back`. 0: only a summary that costs no
    /// more on its own turn, so a session ending on any turn costs no more
    /// than without condense.
    max_payback_turns: u64 = 0, 0 ..= 1_000_000;
    /// Precompute: once the thread has come this share of the way to its
    /// nearest trigger (messages, tokens or iterations since the last
    /// summary), the summary the due turn will need is written in the
    /// background (the proxy always; `/v1/compress` with `precompute:
    /// true`), and the due turn swaps it in without waiting for the upstream
    /// LLM. 0 turns it off. It shapes no summary: changing it changes no
    /// cache key (`compress::precompute`).
    precompute_at: f64 = 0.8, 0 .. 1;
    /// How long the provider keeps a prompt cached (`0s`: the cold-cache
    /// rule is off). A conversation idle longer than this since its last
    /// forwarded request (the proxy's ledger) has a cold cache: the
    /// provider writes its whole prefix again, so a summary past
    /// `precompute_at` of the way to its trigger is written on that turn
    /// (trigger `cold_cache`). The proxy takes an hour where the request's
    /// `cache_control` asks for `ttl: "1h"`. It shapes no summary.
    provider_cache_ttl: Period = Period::CACHE_TTL;
}

replaced!(
    SummaryRole,
    OnUpstreamError,
    TruncateKeep,
    CountSource,
    Period,
    Strategy
);

impl Overlay for Option<ClearSettings> {
    type Over = ClearOverrides;
    fn overlay(&self, over: &ClearOverrides, at: &str) -> Result<Self, Vec<FieldError>> {
        let base = self.clone().unwrap_or_default();
        over.apply(&base, at).map(Some)
    }
}

/// Which part of a text a per-message rule keeps: `head`, `tail`, or `both`
/// ends, around a `…[truncated N characters]…` marker.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum TruncateKeep {
    /// The beginning (a prompt's task statement).
    Head,
    /// The end (a log's final lines).
    Tail,
    /// Both ends, cut in the middle, as fitting does.
    #[default]
    Both,
}

/// What an upstream LLM failure does: `fallback` to a heuristic summary
/// with `degraded: true`, or `fail` with a 502.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum OnUpstreamError {
    /// Answer with a heuristic summary, `degraded: true` and a warning.
    #[default]
    Fallback,
    /// Answer 502; the caller keeps its thread.
    Fail,
}

/// Role of the summary message in OpenAI threads (Anthropic threads always
/// use `user`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum SummaryRole {
    System,
    #[default]
    User,
}

impl Profile {
    /// The profile as JSON without `precompute_at` and `provider_cache_ttl`,
    /// which shape no summary: a continuity key's seed, so moving precompute
    /// (or the proxy's hour-long cache) finds the same summaries.
    pub fn shaping_json(&self) -> String {
        let mut v = serde_json::to_value(self).unwrap_or_default();
        if let Some(map) = v.as_object_mut() {
            map.remove("precompute_at");
            map.remove("provider_cache_ttl");
        }
        v.to_string()
    }

    /// The window a thread counted by `spec` is measured against: the
    /// profile's, else the model's (the verdict and compression both ask).
    pub fn window_for(&self, spec: &CountSpec) -> u64 {
        self.context_window.unwrap_or(spec.context_window)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precompute_at_is_a_share_below_one() {
        let base = Profile::default();
        let at = |v: f64| {
            ProfileOverrides {
                precompute_at: Some(v),
                ..Default::default()
            }
            .apply(&base, "/config")
        };
        assert_eq!(at(0.0).unwrap().precompute_at, 0.0);
        assert_eq!(at(0.5).unwrap().precompute_at, 0.5);
        for bad in [1.0, -0.1, f64::NAN, 2.0] {
            let errs = at(bad).unwrap_err();
            assert_eq!(errs[0].pointer, "/config/precompute_at", "{bad}");
        }
    }

    #[test]
    fn the_profile_window_overrides_the_model_window() {
        let registry = crate::tokens::ModelRegistry::embedded();
        let spec = CountSpec::resolve(&registry, "gpt-4o", None, None, crate::tokens::Method::Bpe);
        assert!(spec.context_window > 0);
        assert_eq!(Profile::default().window_for(&spec), spec.context_window);
        let narrow = Profile {
            context_window: Some(spec.context_window / 2),
            ..Profile::default()
        };
        assert_eq!(narrow.window_for(&spec), spec.context_window / 2);
    }

    #[test]
    fn precompute_at_shapes_no_key() {
        let on = Profile::default();
        let off = Profile {
            precompute_at: 0.0,
            provider_cache_ttl: Period::HOUR,
            ..Profile::default()
        };
        assert_eq!(on.shaping_json(), off.shaping_json());
        assert!(!on.shaping_json().contains("precompute_at"));
        assert!(!on.shaping_json().contains("provider_cache_ttl"));
        // Every other setting still does.
        let other = Profile {
            min_recent_messages: 7,
            ..Profile::default()
        };
        assert_ne!(on.shaping_json(), other.shaping_json());
    }
}
