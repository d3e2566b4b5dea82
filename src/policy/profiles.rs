//! Profiles: named sets of thresholds, so each agent can have its own. The
//! built-in `default` always exists; a TOML or YAML file adds or changes them.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Context;
use serde::Deserialize;

use super::{Profile, ProfileOverrides};
use crate::thread::FieldError;

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
    /// The built-in default plus the profiles of a TOML file, or YAML when it
    /// ends in `.yaml` or `.yml`.
    pub fn from_file(path: &Path) -> anyhow::Result<Self> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading the profiles file {}", path.display()))?;
        let yaml = path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("yaml") || e.eq_ignore_ascii_case("yml"));
        Self::parse(&text, yaml)
            .with_context(|| format!("parsing the profiles file {}", path.display()))
    }

    /// Profiles from TOML text, or YAML (the same fields).
    pub fn parse(text: &str, yaml: bool) -> anyhow::Result<Self> {
        Self::build(match yaml {
            true => serde_norway::from_str(text)?,
            false => toml::from_str(text)?,
        })
    }

    fn build(file: ProfilesFile) -> anyhow::Result<Self> {
        let mut profiles = Self::default();
        // `default` first, so other profiles inherit a changed default.
        let (defaults, others): (Vec<_>, Vec<_>) =
            file.profiles.into_iter().partition(|(n, _)| n == "default");
        for (name, overrides) in defaults.into_iter().chain(others) {
            let profile = overrides
                .apply(&profiles.by_name["default"], &format!("/profiles/{name}"))
                .map_err(|errs| {
                    let field = errs[0]
                        .pointer
                        .trim_start_matches(&format!("/profiles/{name}/"));
                    anyhow::anyhow!("profile `{name}`: {field} {}", errs[0].message)
                })?;
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
                format!(
                    "unknown profile `{}`; known: {}",
                    crate::thread::echo(name),
                    known.join(", ")
                ),
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
    use crate::policy::Profile;

    #[test]
    fn file_profiles_inherit_from_default() {
        let p = Profiles::parse("[profiles.quick]\nmax_messages_before_summary = 15\nmax_tokens_before_summary = 32000\n\n[profiles.default]\nmin_recent_messages = 8\n", false)
        .unwrap();
        let quick = p.get("quick").unwrap();
        assert_eq!(quick.max_messages_before_summary, 15);
        assert_eq!(quick.max_tokens_before_summary, 32_000);
        assert_eq!(quick.min_recent_messages, 8);
        assert_eq!(quick.response_reserve, 4096);
    }

    #[test]
    fn yaml_gives_the_same_profiles_as_toml() {
        let yaml = Profiles::parse("profiles:\n  quick:\n    max_messages_before_summary: 15\n    chars_per_token: 3.5\n    truncate_keep: head\n", true)
        .unwrap();
        let toml = Profiles::parse("[profiles.quick]\nmax_messages_before_summary = 15\nchars_per_token = 3.5\ntruncate_keep = \"head\"\n", false)
        .unwrap();
        assert_eq!(yaml.get("quick"), toml.get("quick"));
        assert_eq!(yaml.get("quick").unwrap().chars_per_token, Some(3.5));
        assert!(
            Profiles::parse("profiles:\n  x:\n    max_mesages_before_summary: 3\n", true).is_err()
        );
    }

    #[test]
    fn a_clear_table_merges_over_the_defaults_and_a_request_over_it() {
        let p = Profiles::parse("[profiles.agent.clear]\nkeep = 5\ntrigger = { tool_uses = 30 }\nexclude_tools = [\"memory\"]\n", false)
        .unwrap();
        let clear = p.get("agent").unwrap().clear.clone().unwrap();
        assert_eq!((clear.keep, clear.trigger.tool_uses), (5, Some(30)));
        assert_eq!(clear.trigger.input_tokens, None);
        assert_eq!(clear.placeholder, crate::policy::DEFAULT_PLACEHOLDER);
        assert_eq!(p.get("default").unwrap().clear, None);
        let req: ProfileOverrides =
            serde_json::from_value(serde_json::json!({"clear": {"clear_at_least": 500}})).unwrap();
        let merged = p.resolve(Some("agent"), Some(&req)).unwrap().clear.unwrap();
        assert_eq!((merged.keep, merged.clear_at_least), (5, 500));
        assert!(Profiles::parse("[profiles.x.clear]\nkep = 1\n", false).is_err());
    }

    #[test]
    fn typos_and_absurd_values_are_rejected() {
        assert!(Profiles::parse("[profiles.x]\nmax_mesages_before_summary = 3\n", false).is_err());
        let e = Profiles::parse("[profiles.x]\nmax_messages_before_summary = 0\n", false);
        assert_eq!(
            e.unwrap_err().to_string(),
            "profile `x`: max_messages_before_summary must be between 1 and 1000000, got 0"
        );
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
