//! A profile: the thresholds one agent runs with. A file profile or a
//! request's `config` names only the fields it changes; unknown fields are
//! rejected, since a typo falling back to a default is the worst bug here.

use serde::{Deserialize, Serialize};

use super::clear::{ClearOverrides, ClearSettings};
use super::overlay::{Overlay, replaced, settings};
use crate::thread::FieldError;
use crate::tokens::CountSpec;
use crate::upstream::CountSource;

settings! {
    /// The thresholds and budgets one agent runs with.
    Profile;
    /// A partial profile: what a file profile or a request's `config` changes.
    ProfileOverrides;
    /// N: summarize when this many conversation messages came since the last summary.
    max_messages_before_summary: u64 = 30, 1 ..= 1_000_000;
    /// K: summarize when what would be sent reaches this many tokens.
    max_tokens_before_summary: u64 = 128_000, 1 ..= 100_000_000;
    /// Newest messages always kept verbatim; nothing is due below this + 4.
    min_recent_messages: u64 = 6, 0 ..= 10_000;
    /// Tokens left free in the window for the model's reply.
    response_reserve: u64 = 4096, 0 ..= 10_000_000;
    /// Upper bound of a summary's size.
    max_summary_tokens: u64 = 2000, 16 ..= 1_000_000;
    /// Overrides the model registry's window when set.
    #[serde(skip_serializing_if = "Option::is_none")]
    context_window: Option<u64> = None, 256 ..= 100_000_000;
    /// Role of the summary message (Anthropic threads always use `user`).
    summary_role: SummaryRole = SummaryRole::User;
    /// `auto` uses the upstream LLM only for spans of at least this many tokens.
    llm_min_tokens: u64 = 4000, 0 ..= 100_000_000;
    /// ...and only when the whole thread has at least this many.
    llm_min_total_tokens: u64 = 0, 0 ..= 100_000_000;
    /// What an upstream LLM failure does: a heuristic fallback, or a 502.
    on_upstream_error: OnUpstreamError = OnUpstreamError::Fallback;
    /// Also due after this many agent iterations (`metadata.iteration`)
    /// since the last summary; off when not set.
    #[serde(skip_serializing_if = "Option::is_none")]
    max_iterations_before_summary: Option<u64> = None, 1 ..= 1_000_000;
    /// Count with `ceil(characters / chars_per_token)` instead of the
    /// tokenizer: for agents whose own estimator decides (3.5, 4).
    #[serde(skip_serializing_if = "Option::is_none")]
    chars_per_token: Option<f64> = None, 0.5 ..= 20;
    /// Per-message rules: a tool result's or user message's text longer
    /// than this many characters is cut.
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tool_result_chars: Option<u64> = None, 64 ..= 100_000_000;
    #[serde(skip_serializing_if = "Option::is_none")]
    max_user_message_chars: Option<u64> = None, 64 ..= 100_000_000;
    /// The same for assistant text (never tool calls or thinking).
    #[serde(skip_serializing_if = "Option::is_none")]
    max_assistant_message_chars: Option<u64> = None, 64 ..= 100_000_000;
    /// Which end of a text a per-message rule keeps.
    truncate_keep: TruncateKeep = TruncateKeep::Both;
    /// Where a verdict's total comes from when the request does not say:
    /// the tokenizer (`local`) or the provider's counting endpoint.
    count: CountSource = CountSource::Local;
    /// Tool-result clearing before any summary; off when not set. An
    /// override merges field by field.
    #[serde(skip_serializing_if = "Option::is_none")]
    clear: Option<ClearSettings> = None;
    /// A summary due by N, K or iterations is written only when it takes in
    /// at least this share of what can be compressed; otherwise the previous
    /// one (and the provider's cached prefix) stays. 0: whenever one is due.
    min_summary_gain: f64 = 0.2, 0 ..= 1;
    /// Precompute: at this share of the way to the nearest trigger, the due
    /// summary is written in the background (`compress::precompute`); 0: off.
    /// It shapes no summary, so no cache key reads it.
    precompute_at: f64 = 0.8, 0 .. 1;
}

replaced!(SummaryRole, OnUpstreamError, TruncateKeep, CountSource);

impl Overlay for Option<ClearSettings> {
    type Over = ClearOverrides;
    fn overlay(&self, over: &ClearOverrides, at: &str) -> Result<Self, Vec<FieldError>> {
        let base = self.clone().unwrap_or_default();
        over.apply(&base, at).map(Some)
    }
}

/// Which part of a long text a per-message truncation rule keeps.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
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

/// What an upstream LLM failure does to a compression.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnUpstreamError {
    /// Answer with a heuristic summary, `degraded: true` and a warning.
    #[default]
    Fallback,
    /// Answer 502; the caller keeps its thread.
    Fail,
}

/// Role of the summary message in OpenAI threads.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SummaryRole {
    System,
    #[default]
    User,
}

impl Profile {
    /// The profile as JSON without `precompute_at`, which shapes no summary:
    /// a continuity key's seed, so moving precompute finds the same summaries.
    pub fn shaping_json(&self) -> String {
        let mut v = serde_json::to_value(self).unwrap_or_default();
        if let Some(map) = v.as_object_mut() {
            map.remove("precompute_at");
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
            ..Profile::default()
        };
        assert_eq!(on.shaping_json(), off.shaping_json());
        assert!(!on.shaping_json().contains("precompute_at"));
        // Every other setting still does.
        let other = Profile {
            min_recent_messages: 7,
            ..Profile::default()
        };
        assert_ne!(on.shaping_json(), other.shaping_json());
    }
}
