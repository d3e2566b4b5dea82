//! The `clear` settings of a profile: which old tool results (and thinking
//! blocks) are replaced by a placeholder before anything is summarized.
//!
//! Modelled on Anthropic's context editing (`clear_tool_uses`,
//! `clear_thinking`), with the same defaults, so a user moving between the
//! two finds the same knobs. Every field is optional in a profile file or a
//! request's `config.clear`; a partial object changes only its fields.

use serde::{Deserialize, Serialize};

use crate::thread::FieldError;

/// Tool uses kept intact, newest first (Anthropic's default).
pub const DEFAULT_KEEP: u64 = 3;
/// Clearing is due from this many input tokens (Anthropic's default).
pub const DEFAULT_TRIGGER_TOKENS: u64 = 100_000;
/// What replaces a cleared result: `{tool}` is the tool's name, `{chars}`
/// the characters removed.
pub const DEFAULT_PLACEHOLDER: &str = "[condense cleared this {tool} result: {chars} characters]";
/// Longest placeholder template, in characters.
const MAX_PLACEHOLDER: usize = 1000;
/// Most names in `exclude_tools`, and the longest name.
const MAX_EXCLUDED: usize = 1000;
const MAX_TOOL_NAME: usize = 256;

/// Clearing as a profile resolves it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClearSettings {
    /// The newest tool uses whose results and inputs stay as they are.
    pub keep: u64,
    /// When clearing is due (either limit reached).
    pub trigger: ClearTrigger,
    /// Clear nothing unless at least this many tokens are saved (a cleared
    /// prefix breaks a provider's prompt cache: worth it only when large).
    pub clear_at_least: u64,
    /// Tools whose results are never cleared.
    pub exclude_tools: Vec<String>,
    /// Also replace a cleared call's input by `{}`.
    pub clear_tool_inputs: bool,
    pub placeholder: String,
    /// Keep the thinking of only the last N assistant turns that have any;
    /// absent: thinking is not cleared.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub keep_thinking_turns: Option<u64>,
}

/// Due when the thread has at least `input_tokens` tokens or at least
/// `tool_uses` tool uses; a limit that is absent never fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClearTrigger {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_uses: Option<u64>,
}

impl Default for ClearSettings {
    fn default() -> Self {
        Self {
            keep: DEFAULT_KEEP,
            trigger: ClearTrigger {
                input_tokens: Some(DEFAULT_TRIGGER_TOKENS),
                tool_uses: None,
            },
            clear_at_least: 0,
            exclude_tools: Vec::new(),
            clear_tool_inputs: false,
            placeholder: DEFAULT_PLACEHOLDER.to_string(),
            keep_thinking_turns: None,
        }
    }
}

/// A partial `clear` object: what a profile file or a request changes.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ClearOverrides {
    pub keep: Option<u64>,
    /// Replaces the whole trigger: limits it does not name are off.
    pub trigger: Option<ClearTrigger>,
    pub clear_at_least: Option<u64>,
    pub exclude_tools: Option<Vec<String>>,
    pub clear_tool_inputs: Option<bool>,
    pub placeholder: Option<String>,
    pub keep_thinking_turns: Option<u64>,
}

impl ClearOverrides {
    /// `base` (the defaults when None) with these fields changed; errors
    /// point at `{at}/{field}`.
    pub fn apply(
        &self,
        base: Option<&ClearSettings>,
        at: &str,
    ) -> Result<ClearSettings, Vec<FieldError>> {
        let mut errs = Vec::new();
        let mut bound = |name: &str, v: Option<u64>, lo: u64, hi: u64| {
            if let Some(v) = v.filter(|v| *v < lo || *v > hi) {
                errs.push(FieldError::new(
                    format!("{at}/{name}"),
                    format!("must be between {lo} and {hi}, got {v}"),
                ));
            }
        };
        bound("keep", self.keep, 0, 100_000);
        bound("clear_at_least", self.clear_at_least, 0, 100_000_000);
        bound("keep_thinking_turns", self.keep_thinking_turns, 0, 100_000);
        if let Some(t) = &self.trigger {
            bound("trigger/input_tokens", t.input_tokens, 1, 100_000_000);
            bound("trigger/tool_uses", t.tool_uses, 1, 1_000_000);
            if t.input_tokens.is_none() && t.tool_uses.is_none() {
                errs.push(FieldError::new(
                    format!("{at}/trigger"),
                    "names no limit; give `input_tokens`, `tool_uses` or both",
                ));
            }
        }
        if let Some(names) = &self.exclude_tools {
            if names.len() > MAX_EXCLUDED {
                errs.push(FieldError::new(
                    format!("{at}/exclude_tools"),
                    format!("must name at most {MAX_EXCLUDED} tools"),
                ));
            }
            if let Some(i) = names
                .iter()
                .position(|n| n.is_empty() || n.chars().count() > MAX_TOOL_NAME)
            {
                errs.push(FieldError::new(
                    format!("{at}/exclude_tools/{i}"),
                    format!("must be a tool name of 1 to {MAX_TOOL_NAME} characters"),
                ));
            }
        }
        if let Some(p) = &self.placeholder
            && (p.trim().is_empty() || p.chars().count() > MAX_PLACEHOLDER)
        {
            errs.push(FieldError::new(
                format!("{at}/placeholder"),
                format!("must be a text of 1 to {MAX_PLACEHOLDER} characters"),
            ));
        }
        if !errs.is_empty() {
            return Err(errs);
        }
        let base = base.cloned().unwrap_or_default();
        Ok(ClearSettings {
            keep: self.keep.unwrap_or(base.keep),
            trigger: self.trigger.unwrap_or(base.trigger),
            clear_at_least: self.clear_at_least.unwrap_or(base.clear_at_least),
            exclude_tools: self.exclude_tools.clone().unwrap_or(base.exclude_tools),
            clear_tool_inputs: self.clear_tool_inputs.unwrap_or(base.clear_tool_inputs),
            placeholder: self.placeholder.clone().unwrap_or(base.placeholder),
            keep_thinking_turns: self.keep_thinking_turns.or(base.keep_thinking_turns),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_partial_object_changes_only_its_fields() {
        let base = ClearOverrides {
            keep: Some(5),
            exclude_tools: Some(vec!["memory".into()]),
            ..Default::default()
        }
        .apply(None, "/x")
        .unwrap();
        assert_eq!(base.trigger.input_tokens, Some(DEFAULT_TRIGGER_TOKENS));
        let merged = ClearOverrides {
            clear_at_least: Some(1000),
            trigger: Some(ClearTrigger {
                input_tokens: None,
                tool_uses: Some(10),
            }),
            ..Default::default()
        }
        .apply(Some(&base), "/x")
        .unwrap();
        assert_eq!(merged.keep, 5);
        assert_eq!(merged.exclude_tools, vec!["memory".to_string()]);
        assert_eq!(merged.clear_at_least, 1000);
        assert_eq!(
            merged.trigger.input_tokens, None,
            "a trigger replaces the whole trigger"
        );
    }

    #[test]
    fn bad_values_name_their_field() {
        let errs = ClearOverrides {
            keep: Some(1_000_000),
            trigger: Some(ClearTrigger {
                input_tokens: None,
                tool_uses: None,
            }),
            placeholder: Some(" ".into()),
            exclude_tools: Some(vec!["ok".into(), String::new()]),
            ..Default::default()
        }
        .apply(None, "/config/clear")
        .unwrap_err();
        let pointers: Vec<&str> = errs.iter().map(|e| e.pointer.as_str()).collect();
        assert_eq!(
            pointers,
            [
                "/config/clear/keep",
                "/config/clear/trigger",
                "/config/clear/exclude_tools/1",
                "/config/clear/placeholder"
            ]
        );
    }
}
