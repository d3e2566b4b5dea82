//! The `clear` settings of a profile: which old tool results (and thinking
//! blocks) become a placeholder before anything is summarized. Modelled on
//! Anthropic's context editing, with its defaults, so its users find the same knobs.

use serde::{Deserialize, Serialize};

use super::overlay::{replaced, settings, within};
use crate::thread::FieldError;

/// Tool uses kept intact, newest first (Anthropic's default).
const DEFAULT_KEEP: u64 = 3;
/// Clearing is due from this many input tokens (Anthropic's default).
const DEFAULT_TRIGGER_TOKENS: u64 = 100_000;
/// What replaces a cleared result: `{tool}` is the tool's name, `{chars}`
/// the characters removed.
pub const DEFAULT_PLACEHOLDER: &str = "[condense cleared this {tool} result: {chars} characters]";
/// A trigger's largest limits.
const MAX_TRIGGER_TOKENS: u64 = 100_000_000;
const MAX_TRIGGER_TOOL_USES: u64 = 1_000_000;
/// Longest placeholder template, in characters. This limit and the next two
/// are repeated as literals in the `#[schema]` attributes below (utoipa
/// takes no constants there).
const MAX_PLACEHOLDER: usize = 1000;
/// Most names in `exclude_tools`, and the longest name.
const MAX_EXCLUDED: usize = 1000;
const MAX_TOOL_NAME: usize = 256;

settings! {
    /// Tool-result clearing, as Anthropic's context editing
    /// (`clear_tool_uses`, `clear_thinking`) does it, for any provider;
    /// absent from a profile: off (except for the `clear_tool_results`
    /// strategy, which uses these defaults). Deterministic: the same thread
    /// and settings give the same bytes, and a result already holding the
    /// placeholder is not cleared again.
    ClearSettings;
    /// A partial `clear` object; each field given replaces the profile's (or
    /// the default). Bounds as in `ClearSettings`; errors point at
    /// `/config/clear/<field>`.
    ClearOverrides;
    /// The newest tool uses whose results (and inputs) stay as they are.
    keep: u64 = DEFAULT_KEEP, 0 ..= 100_000;
    trigger: ClearTrigger = ClearTrigger {
        input_tokens: Some(DEFAULT_TRIGGER_TOKENS),
        tool_uses: None,
    }, check limits;
    /// Clear nothing unless at least this many tokens are saved; a cleared
    /// prefix breaks a provider's prompt cache, so it is worth it only when large.
    clear_at_least: u64 = 0, 0 ..= 100_000_000;
    /// Tools whose results are never cleared.
    #[schema(max_items = 1000, min_length = 1, max_length = 256)]
    exclude_tools: Vec<String> = Vec::<String>::new(), check tool_names;
    /// Also replace a cleared tool use's input (OpenAI `function.arguments`,
    /// Anthropic `input`) by `{}`.
    clear_tool_inputs: bool = false;
    /// The text that replaces a cleared result: `{tool}` is the tool's name,
    /// `{chars}` the characters removed.
    #[schema(min_length = 1, max_length = 1000)]
    placeholder: String = DEFAULT_PLACEHOLDER.to_string(), check template;
    /// Keep the thinking blocks of only the last N assistant messages that
    /// have any; older ones are removed, except in the turn in progress (the
    /// assistant messages after the last user message with text: a tool
    /// loop, whose thinking the providers require) and where a message would
    /// be left empty. Kept blocks are byte for byte. A Responses `reasoning`
    /// item is never removed (OpenAI refuses an output item sent without the
    /// reasoning item that produced it). Absent: thinking is not cleared.
    #[serde(skip_serializing_if = "Option::is_none")]
    keep_thinking_turns: Option<u64> as u64 = None, 0 ..= 100_000;
}

/// When clearing is due: the thread has at least `input_tokens` tokens, or
/// at least `tool_uses` tool uses (either); a limit that is absent never
/// fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClearTrigger {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_uses: Option<u64>,
}

/// The schema by hand: utoipa 5.5 writes `#[schema(min_properties = 1)]`
/// as `maxProperties: 1`. The bounds are the ones [`limits`] checks.
impl utoipa::PartialSchema for ClearTrigger {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{AdditionalProperties, ObjectBuilder, SchemaType, Type};
        let limit = |max: u64| {
            ObjectBuilder::new()
                .schema_type(SchemaType::from_iter([Type::Integer, Type::Null]))
                .minimum(Some(1))
                .maximum(Some(max))
        };
        ObjectBuilder::new()
            .schema_type(Type::Object)
            .description(Some(
                "When clearing is due: the thread has at least `input_tokens` tokens, \
                 or at least `tool_uses` tool uses (either). A request's `trigger` \
                 replaces the profile's whole: a limit it does not name (or names as \
                 null) is off; one that names none is a 422.",
            ))
            .property("input_tokens", limit(MAX_TRIGGER_TOKENS))
            .property("tool_uses", limit(MAX_TRIGGER_TOOL_USES))
            .min_properties(Some(1))
            .additional_properties(Some(AdditionalProperties::FreeForm(false)))
            .into()
    }
}

impl utoipa::ToSchema for ClearTrigger {}

replaced!(ClearTrigger);

/// A trigger's limits in range, and at least one of them.
fn limits(t: &ClearTrigger, at: &str) -> Result<(), Vec<FieldError>> {
    let mut errs = Vec::new();
    for (name, v, hi) in [
        ("input_tokens", t.input_tokens, MAX_TRIGGER_TOKENS),
        ("tool_uses", t.tool_uses, MAX_TRIGGER_TOOL_USES),
    ] {
        if let Some(Err(e)) = v.map(|v| within(v as f64, 1.0..=hi as f64)) {
            errs.push(FieldError::new(format!("{at}/{name}"), e));
        }
    }
    if t.input_tokens.is_none() && t.tool_uses.is_none() {
        let e = "names no limit; give `input_tokens`, `tool_uses` or both";
        errs.push(FieldError::new(at, e));
    }
    errs.is_empty().then_some(()).ok_or(errs)
}

fn tool_names(names: &[String], at: &str) -> Result<(), Vec<FieldError>> {
    let mut errs = Vec::new();
    if names.len() > MAX_EXCLUDED {
        let e = format!("must name at most {MAX_EXCLUDED} tools");
        errs.push(FieldError::new(at, e));
    }
    let bad = |n: &String| n.is_empty() || n.chars().count() > MAX_TOOL_NAME;
    if let Some(i) = names.iter().position(bad) {
        let e = format!("must be a tool name of 1 to {MAX_TOOL_NAME} characters");
        errs.push(FieldError::new(format!("{at}/{i}"), e));
    }
    errs.is_empty().then_some(()).ok_or(errs)
}

fn template(p: &str, at: &str) -> Result<(), Vec<FieldError>> {
    match p.trim().is_empty() || p.chars().count() > MAX_PLACEHOLDER {
        true => Err(vec![FieldError::new(
            at,
            format!("must be a text of 1 to {MAX_PLACEHOLDER} characters"),
        )]),
        false => Ok(()),
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
        .apply(&ClearSettings::default(), "/x")
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
        .apply(&base, "/x")
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
        .apply(&ClearSettings::default(), "/config/clear")
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
