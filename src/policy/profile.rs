//! Profiles: named sets of thresholds, so each agent can have its own.
//!
//! A profile names only the fields it changes (see [`super::profiles`] for
//! the file); a request may override single fields in `config`. Unknown
//! fields are rejected everywhere, because a typo that silently falls back
//! to a default is the worst kind of bug here.

use serde::{Deserialize, Serialize};

use super::clear::{ClearOverrides, ClearSettings};
use crate::thread::FieldError;
use crate::tokens::CountSpec;
use crate::upstream::CountSource;

/// The thresholds and budgets one agent runs with.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Profile {
    /// N: summarize when this many conversation messages came since the last summary.
    pub max_messages_before_summary: u64,
    /// K: summarize when what would be sent reaches this many tokens.
    pub max_tokens_before_summary: u64,
    /// Newest messages always kept verbatim; nothing is due below this + 4.
    pub min_recent_messages: u64,
    /// Tokens left free in the window for the model's reply.
    pub response_reserve: u64,
    /// Upper bound of a summary's size.
    pub max_summary_tokens: u64,
    /// Overrides the model registry's window when set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u64>,
    /// Role of the summary message (Anthropic threads always use `user`).
    pub summary_role: SummaryRole,
    /// `auto` uses the upstream LLM only for spans of at least this many tokens.
    pub llm_min_tokens: u64,
    /// ...and only when the whole thread has at least this many (a tier by
    /// the thread's total: heuristic below, LLM above).
    pub llm_min_total_tokens: u64,
    /// What an upstream LLM failure does: a heuristic fallback, or a 502.
    pub on_upstream_error: OnUpstreamError,
    /// Also due after this many agent iterations (`metadata.iteration`)
    /// since the last summary; off when not set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_iterations_before_summary: Option<u64>,
    /// Count with `ceil(characters / chars_per_token)` instead of the
    /// tokenizer: for agents whose own estimator decides (3.5, 4).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chars_per_token: Option<f64>,
    /// Per-message rules for the kept thread: each text of a tool result
    /// or a user message (a string content, or one text part or block)
    /// longer than this many characters is cut.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tool_result_chars: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_user_message_chars: Option<u64>,
    /// The same rule for the text of assistant messages (an agent's
    /// outputs; never their tool calls or thinking).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_assistant_message_chars: Option<u64>,
    /// Which end of a text a per-message rule keeps.
    pub truncate_keep: TruncateKeep,
    /// Where a verdict's total comes from when the request does not say:
    /// the tokenizer (`local`) or the provider's counting endpoint.
    pub count: CountSource,
    /// Tool-result clearing before any summary; off when not set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clear: Option<ClearSettings>,
    /// A summary due by N, K or iterations is written only when it would
    /// summarize at least this share of what can be compressed (the
    /// summary and the conversation since it); otherwise the previous
    /// summary, and the byte-identical prefix the provider caches, stay.
    /// 0 writes one whenever a trigger fires (the seed designs).
    pub min_summary_gain: f64,
    /// Precompute: once the thread has come this share of the way to its
    /// nearest trigger, the summary the due turn will need is written in
    /// the background, so that turn waits for no upstream call (see
    /// `compress::precompute`). 0 turns it off. It shapes no summary, so
    /// no cache key reads it ([`Profile::shaping_json`]).
    pub precompute_at: f64,
}

/// The default `precompute_at`: a fifth of the way before a summary is due
/// leaves an LLM several turns to write it.
pub const PRECOMPUTE_AT: f64 = 0.8;

/// The default `min_summary_gain`: a new summary must take a fifth of
/// what it could compress, or the provider's cache is rewritten for little.
pub const MIN_SUMMARY_GAIN: f64 = 0.2;

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

impl Default for Profile {
    fn default() -> Self {
        Self {
            max_messages_before_summary: 30,
            max_tokens_before_summary: 128_000,
            min_recent_messages: 6,
            response_reserve: 4096,
            max_summary_tokens: 2000,
            context_window: None,
            summary_role: SummaryRole::User,
            llm_min_tokens: 4000,
            llm_min_total_tokens: 0,
            on_upstream_error: OnUpstreamError::Fallback,
            max_iterations_before_summary: None,
            chars_per_token: None,
            max_tool_result_chars: None,
            max_user_message_chars: None,
            max_assistant_message_chars: None,
            truncate_keep: TruncateKeep::Both,
            count: CountSource::Local,
            clear: None,
            min_summary_gain: MIN_SUMMARY_GAIN,
            precompute_at: PRECOMPUTE_AT,
        }
    }
}

impl Profile {
    /// The profile as JSON without the settings that shape no summary
    /// (`precompute_at`): what a continuity key is seeded with, so that
    /// turning precompute on or off, or moving its point, finds the same
    /// summaries (and the provider's cache keeps hitting).
    pub fn shaping_json(&self) -> String {
        let mut v = serde_json::to_value(self).unwrap_or_default();
        if let Some(map) = v.as_object_mut() {
            map.remove("precompute_at");
        }
        v.to_string()
    }

    /// The context window a thread counted by `spec` is measured against:
    /// the profile's (a request's `config` may have set it), else the
    /// model's from the registry. The verdict and compression both ask here.
    pub fn window_for(&self, spec: &CountSpec) -> u64 {
        self.context_window.unwrap_or(spec.context_window)
    }
}

/// A partial profile: what a file profile or a request's `config` changes.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileOverrides {
    pub max_messages_before_summary: Option<u64>,
    pub max_tokens_before_summary: Option<u64>,
    pub min_recent_messages: Option<u64>,
    pub response_reserve: Option<u64>,
    pub max_summary_tokens: Option<u64>,
    pub context_window: Option<u64>,
    pub summary_role: Option<SummaryRole>,
    pub llm_min_tokens: Option<u64>,
    pub llm_min_total_tokens: Option<u64>,
    pub on_upstream_error: Option<OnUpstreamError>,
    pub max_iterations_before_summary: Option<u64>,
    pub chars_per_token: Option<f64>,
    pub max_tool_result_chars: Option<u64>,
    pub max_user_message_chars: Option<u64>,
    pub max_assistant_message_chars: Option<u64>,
    pub truncate_keep: Option<TruncateKeep>,
    pub count: Option<CountSource>,
    /// Merged field by field over the profile's `clear` (or the defaults).
    pub clear: Option<ClearOverrides>,
    pub min_summary_gain: Option<f64>,
    pub precompute_at: Option<f64>,
}

/// Inclusive bounds per field: beyond them a value is a mistake, not a setting.
const BOUNDS: [(&str, u64, u64); 12] = [
    ("max_messages_before_summary", 1, 1_000_000),
    ("max_tokens_before_summary", 1, 100_000_000),
    ("min_recent_messages", 0, 10_000),
    ("response_reserve", 0, 10_000_000),
    ("max_summary_tokens", 16, 1_000_000),
    ("context_window", 256, 100_000_000),
    ("llm_min_tokens", 0, 100_000_000),
    ("llm_min_total_tokens", 0, 100_000_000),
    ("max_iterations_before_summary", 1, 1_000_000),
    ("max_tool_result_chars", 64, 100_000_000),
    ("max_user_message_chars", 64, 100_000_000),
    ("max_assistant_message_chars", 64, 100_000_000),
];

impl ProfileOverrides {
    /// `base` with these fields changed; errors point at `{at}/{field}`.
    pub fn apply(&self, base: &Profile, at: &str) -> Result<Profile, Vec<FieldError>> {
        let clear = self.checked(base, at)?;
        Ok(self.merged(base, clear))
    }

    /// Every field within its bounds (all errors at once), and the clearing
    /// settings as they apply on top of `base`'s.
    fn checked(&self, base: &Profile, at: &str) -> Result<Option<ClearSettings>, Vec<FieldError>> {
        let fields = [
            self.max_messages_before_summary,
            self.max_tokens_before_summary,
            self.min_recent_messages,
            self.response_reserve,
            self.max_summary_tokens,
            self.context_window,
            self.llm_min_tokens,
            self.llm_min_total_tokens,
            self.max_iterations_before_summary,
            self.max_tool_result_chars,
            self.max_user_message_chars,
            self.max_assistant_message_chars,
        ];
        let mut errs: Vec<FieldError> = BOUNDS
            .iter()
            .zip(fields)
            .filter_map(|(&(name, lo, hi), v)| {
                let v = v?;
                (v < lo || v > hi).then(|| {
                    FieldError::new(
                        format!("{at}/{name}"),
                        format!("must be between {lo} and {hi}, got {v}"),
                    )
                })
            })
            .collect();
        if let Some(cpt) = self.chars_per_token
            && !(cpt.is_finite() && (0.5..=20.0).contains(&cpt))
        {
            errs.push(FieldError::new(
                format!("{at}/chars_per_token"),
                format!("must be between 0.5 and 20 (3.5 and 4 are usual), got {cpt}"),
            ));
        }
        if let Some(g) = self.min_summary_gain
            && !(g.is_finite() && (0.0..=1.0).contains(&g))
        {
            errs.push(FieldError::new(
                format!("{at}/min_summary_gain"),
                format!("must be between 0 and 1 (a share), got {g}"),
            ));
        }
        if let Some(share) = self.precompute_at
            && !(share.is_finite() && (0.0..1.0).contains(&share))
        {
            errs.push(FieldError::new(
                format!("{at}/precompute_at"),
                format!("must be at least 0 (off) and below 1 (a share of the way to the nearest trigger), got {share}"),
            ));
        }
        let clear = match &self.clear {
            Some(c) => match c.apply(base.clear.as_ref(), &format!("{at}/clear")) {
                Ok(c) => Some(c),
                Err(e) => {
                    errs.extend(e);
                    None
                }
            },
            None => base.clear.clone(),
        };
        if errs.is_empty() {
            Ok(clear)
        } else {
            Err(errs)
        }
    }

    /// `base` with the fields set here taken instead; `clear` already merged.
    fn merged(&self, base: &Profile, clear: Option<ClearSettings>) -> Profile {
        Profile {
            max_messages_before_summary: self
                .max_messages_before_summary
                .unwrap_or(base.max_messages_before_summary),
            max_tokens_before_summary: self
                .max_tokens_before_summary
                .unwrap_or(base.max_tokens_before_summary),
            min_recent_messages: self.min_recent_messages.unwrap_or(base.min_recent_messages),
            response_reserve: self.response_reserve.unwrap_or(base.response_reserve),
            max_summary_tokens: self.max_summary_tokens.unwrap_or(base.max_summary_tokens),
            context_window: self.context_window.or(base.context_window),
            summary_role: self.summary_role.unwrap_or(base.summary_role),
            llm_min_tokens: self.llm_min_tokens.unwrap_or(base.llm_min_tokens),
            llm_min_total_tokens: self
                .llm_min_total_tokens
                .unwrap_or(base.llm_min_total_tokens),
            on_upstream_error: self.on_upstream_error.unwrap_or(base.on_upstream_error),
            max_iterations_before_summary: self
                .max_iterations_before_summary
                .or(base.max_iterations_before_summary),
            chars_per_token: self.chars_per_token.or(base.chars_per_token),
            max_tool_result_chars: self.max_tool_result_chars.or(base.max_tool_result_chars),
            max_user_message_chars: self.max_user_message_chars.or(base.max_user_message_chars),
            max_assistant_message_chars: self
                .max_assistant_message_chars
                .or(base.max_assistant_message_chars),
            truncate_keep: self.truncate_keep.unwrap_or(base.truncate_keep),
            count: self.count.unwrap_or(base.count),
            clear,
            min_summary_gain: self.min_summary_gain.unwrap_or(base.min_summary_gain),
            precompute_at: self.precompute_at.unwrap_or(base.precompute_at),
        }
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
