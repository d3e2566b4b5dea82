//! Profiles: named sets of thresholds, so each agent can have its own.
//!
//! The built-in `default` always exists; a TOML file adds or changes profiles,
//! each naming only the fields it changes. A request may override single
//! fields in `config`. Unknown fields are rejected everywhere, because a typo
//! that silently falls back to a default is the worst kind of bug here.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Context;
use serde::{Deserialize, Serialize};

use crate::thread::FieldError;

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
    /// What an upstream LLM failure does: a heuristic fallback, or a 502.
    pub on_upstream_error: OnUpstreamError,
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
            on_upstream_error: OnUpstreamError::Fallback,
        }
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
    pub on_upstream_error: Option<OnUpstreamError>,
}

/// Inclusive bounds per field: beyond them a value is a mistake, not a setting.
const BOUNDS: [(&str, u64, u64); 7] = [
    ("max_messages_before_summary", 1, 1_000_000),
    ("max_tokens_before_summary", 1, 100_000_000),
    ("min_recent_messages", 0, 10_000),
    ("response_reserve", 0, 10_000_000),
    ("max_summary_tokens", 16, 1_000_000),
    ("context_window", 256, 100_000_000),
    ("llm_min_tokens", 0, 100_000_000),
];

impl ProfileOverrides {
    /// `base` with these fields changed; errors point at `{at}/{field}`.
    pub fn apply(&self, base: &Profile, at: &str) -> Result<Profile, Vec<FieldError>> {
        let fields = [
            self.max_messages_before_summary,
            self.max_tokens_before_summary,
            self.min_recent_messages,
            self.response_reserve,
            self.max_summary_tokens,
            self.context_window,
            self.llm_min_tokens,
        ];
        let errs: Vec<FieldError> = BOUNDS
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
        if !errs.is_empty() {
            return Err(errs);
        }
        Ok(Profile {
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
            on_upstream_error: self.on_upstream_error.unwrap_or(base.on_upstream_error),
        })
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProfilesFile {
    #[serde(default)]
    profiles: BTreeMap<String, ProfileOverrides>,
}

/// All profiles by name; `default` is always present.
#[derive(Debug, Clone)]
pub struct Profiles {
    by_name: BTreeMap<String, Profile>,
}

impl Default for Profiles {
    fn default() -> Self {
        Self {
            by_name: BTreeMap::from([("default".to_string(), Profile::default())]),
        }
    }
}

impl Profiles {
    /// The built-in default plus the profiles of a TOML file (`[profiles.NAME]` tables).
    pub fn from_file(path: &Path) -> anyhow::Result<Self> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading the profiles file {}", path.display()))?;
        Self::parse(&text).with_context(|| format!("parsing the profiles file {}", path.display()))
    }

    pub fn parse(text: &str) -> anyhow::Result<Self> {
        let file: ProfilesFile = toml::from_str(text)?;
        let mut profiles = Self::default();
        // `default` first, so other profiles inherit a changed default.
        let (defaults, others): (Vec<_>, Vec<_>) =
            file.profiles.into_iter().partition(|(n, _)| n == "default");
        for (name, overrides) in defaults.into_iter().chain(others) {
            let profile = overrides
                .apply(&profiles.by_name["default"], &format!("/profiles/{name}"))
                .map_err(|errs| anyhow::anyhow!("profile `{name}`: {}", errs[0].message))?;
            profiles.by_name.insert(name, profile);
        }
        Ok(profiles)
    }

    pub fn get(&self, name: &str) -> Option<&Profile> {
        self.by_name.get(name)
    }

    pub fn all(&self) -> &BTreeMap<String, Profile> {
        &self.by_name
    }

    /// The named profile (default when None) with a request's overrides applied.
    pub fn resolve(
        &self,
        name: Option<&str>,
        overrides: Option<&ProfileOverrides>,
    ) -> Result<Profile, Vec<FieldError>> {
        let name = name.unwrap_or("default");
        let base = self.get(name).ok_or_else(|| {
            let known: Vec<&str> = self.by_name.keys().map(String::as_str).collect();
            vec![FieldError::new(
                "/profile",
                format!("unknown profile `{name}`; known: {}", known.join(", ")),
            )]
        })?;
        match overrides {
            Some(o) => o.apply(base, "/config"),
            None => Ok(base.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_profiles_inherit_from_default() {
        let p = Profiles::parse(
            "[profiles.quick]\nmax_messages_before_summary = 15\nmax_tokens_before_summary = 32000\n\n[profiles.default]\nmin_recent_messages = 8\n",
        )
        .unwrap();
        let quick = p.get("quick").unwrap();
        assert_eq!(quick.max_messages_before_summary, 15);
        assert_eq!(quick.max_tokens_before_summary, 32_000);
        assert_eq!(quick.min_recent_messages, 8);
        assert_eq!(quick.response_reserve, 4096);
    }

    #[test]
    fn typos_and_absurd_values_are_rejected() {
        assert!(Profiles::parse("[profiles.x]\nmax_mesages_before_summary = 3\n").is_err());
        assert!(Profiles::parse("[profiles.x]\nmax_messages_before_summary = 0\n").is_err());
        let errs = ProfileOverrides {
            context_window: Some(10),
            ..Default::default()
        }
        .apply(&Profile::default(), "/config")
        .unwrap_err();
        assert_eq!(errs[0].pointer, "/config/context_window");
    }

    #[test]
    fn unknown_profile_is_an_error_naming_the_field() {
        let errs = Profiles::default().resolve(Some("nope"), None).unwrap_err();
        assert_eq!(errs[0].pointer, "/profile");
    }
}
