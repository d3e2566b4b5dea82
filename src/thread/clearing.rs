//! Clearing in the caller's wire format: old tool results become a placeholder,
//! old tool inputs an empty object, old thinking blocks go (as [`super::edit`]).

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use super::edit::reparse;
use super::{Message, WireFormat};

/// What to clear in one message.
#[derive(Debug, Default)]
pub struct Clearing<'a> {
    /// Call id -> the placeholder that replaces its result's content.
    pub results: HashMap<&'a str, String>,
    /// Call ids whose input (arguments) becomes `{}`.
    pub inputs: HashSet<&'a str>,
    /// Remove the message's thinking and redacted thinking blocks.
    pub thinking: bool,
}

impl Clearing<'_> {
    pub fn is_empty(&self) -> bool {
        self.results.is_empty() && self.inputs.is_empty() && !self.thinking
    }
}

/// The message with `what` cleared; None when nothing changed.
pub fn clear(m: &Message, format: WireFormat, what: &Clearing<'_>) -> Option<Message> {
    if what.is_empty() {
        return None;
    }
    let mut raw = m.raw.clone();
    let changed = match format {
        WireFormat::OpenAi => openai(&mut raw, what),
        WireFormat::Anthropic => anthropic(&mut raw, what),
        WireFormat::Responses => responses(&mut raw, what),
    };
    if !changed {
        return None;
    }
    reparse(raw, format).ok()
}

/// Sets `*slot` to `value`; whether that changed it.
fn set(slot: &mut Value, value: Value) -> bool {
    if *slot == value {
        return false;
    }
    *slot = value;
    true
}

fn openai(raw: &mut Value, what: &Clearing<'_>) -> bool {
    let mut changed = false;
    let id = raw.get("tool_call_id").and_then(Value::as_str);
    if let Some(placeholder) = id.and_then(|id| what.results.get(id)) {
        let placeholder = Value::String(placeholder.clone());
        if let Some(content) = raw.get_mut("content") {
            changed |= set(content, placeholder);
        }
    }
    let calls = raw.get_mut("tool_calls").and_then(Value::as_array_mut);
    for call in calls.into_iter().flatten() {
        let id = call.get("id").and_then(Value::as_str);
        if !id.is_some_and(|id| what.inputs.contains(id)) {
            continue;
        }
        if let Some(args) = call.pointer_mut("/function/arguments") {
            changed |= set(args, "{}".into());
        }
        // A custom tool's free-form input has no empty object: empty text.
        if let Some(input) = call.pointer_mut("/custom/input") {
            changed |= set(input, "".into());
        }
    }
    changed
}

/// A Responses item; reasoning is never removed (OpenAI refuses its outputs without it).
fn responses(raw: &mut Value, what: &Clearing<'_>) -> bool {
    let text = |k: &str| raw.get(k).and_then(Value::as_str);
    let Some(id) = text("call_id").map(str::to_owned) else {
        return false;
    };
    let kind = text("type").unwrap_or_default();
    let (key, new) = if kind.ends_with("_output") {
        ("output", what.results.get(id.as_str()).cloned())
    } else if kind == "custom_tool_call" {
        ("input", what.inputs.contains(id.as_str()).then(String::new))
    } else {
        (
            "arguments",
            what.inputs.contains(id.as_str()).then(|| "{}".into()),
        )
    };
    match (new, raw.get_mut(key)) {
        (Some(new), Some(v)) => set(v, new.into()),
        _ => false,
    }
}

fn anthropic(raw: &mut Value, what: &Clearing<'_>) -> bool {
    let Some(blocks) = raw.get_mut("content").and_then(Value::as_array_mut) else {
        return false;
    };
    let mut changed = false;
    if what.thinking {
        let before = blocks.len();
        blocks.retain(|b| {
            !matches!(
                b.get("type").and_then(Value::as_str),
                Some("thinking" | "redacted_thinking")
            )
        });
        changed |= blocks.len() != before;
    }
    for b in blocks {
        let key = |k: &str| b.get(k).and_then(Value::as_str).map(str::to_owned);
        match key("type").as_deref() {
            Some("tool_result") => {
                let id = key("tool_use_id");
                if let Some(p) = id.as_deref().and_then(|id| what.results.get(id)) {
                    let p = Value::String(p.clone());
                    changed |= match b.get_mut("content") {
                        Some(content) => set(content, p),
                        None => {
                            b["content"] = p;
                            true
                        }
                    };
                }
            }
            Some("tool_use") => {
                let id = key("id");
                if id.as_deref().is_some_and(|id| what.inputs.contains(id))
                    && let Some(input) = b.get_mut("input")
                {
                    changed |= set(input, Value::Object(Map::new()));
                }
            }
            _ => {}
        }
    }
    changed
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::thread::Part;

    fn one(format: WireFormat, raw: Value) -> Message {
        reparse(raw, format).unwrap()
    }

    #[test]
    fn anthropic_results_inputs_and_thinking_keep_everything_else() {
        let m = one(
            WireFormat::Anthropic,
            json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "a", "is_error": true, "cache_control": {"type": "ephemeral"},
                 "content": [{"type": "text", "text": "long output"}]},
                {"type": "tool_result", "tool_use_id": "b", "content": "kept"}
            ]}),
        );
        let what = Clearing {
            results: HashMap::from([("a", "[cleared]".to_string())]),
            ..Default::default()
        };
        let out = clear(&m, WireFormat::Anthropic, &what).unwrap();
        assert_eq!(
            out.raw["content"][0],
            json!({"type": "tool_result", "tool_use_id": "a", "is_error": true,
                   "cache_control": {"type": "ephemeral"}, "content": "[cleared]"})
        );
        assert_eq!(out.raw["content"][1], m.raw["content"][1]);
        assert_eq!(
            clear(&out, WireFormat::Anthropic, &what),
            None,
            "nothing left to change"
        );

        let a = one(
            WireFormat::Anthropic,
            json!({"role": "assistant", "content": [
                {"type": "thinking", "thinking": "hmm", "signature": "sig"},
                {"type": "redacted_thinking", "data": "ZW5j"},
                {"type": "tool_use", "id": "a", "name": "bash", "input": {"command": "ls"}}
            ]}),
        );
        let what = Clearing {
            inputs: HashSet::from(["a"]),
            thinking: true,
            ..Default::default()
        };
        let out = clear(&a, WireFormat::Anthropic, &what).unwrap();
        assert_eq!(
            out.raw["content"],
            json!([{"type": "tool_use", "id": "a", "name": "bash", "input": {}}])
        );
        assert!(matches!(&out.parts[..], [Part::ToolCall(c)] if c.arguments == "{}"));
    }

    #[test]
    fn openai_tool_messages_and_arguments() {
        let m = one(
            WireFormat::OpenAi,
            json!({"role": "tool", "tool_call_id": "a", "content": [{"type": "text", "text": "out"}], "x": 1}),
        );
        let what = Clearing {
            results: HashMap::from([("a", "[cleared]".to_string())]),
            inputs: HashSet::from(["a"]),
            ..Default::default()
        };
        let out = clear(&m, WireFormat::OpenAi, &what).unwrap();
        assert_eq!(
            out.raw,
            json!({"role": "tool", "tool_call_id": "a", "content": "[cleared]", "x": 1})
        );
        let call = one(
            WireFormat::OpenAi,
            json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "bash", "arguments": "{\"command\": \"ls\"}"}},
                {"id": "b", "type": "function", "function": {"name": "bash", "arguments": "{\"command\": \"pwd\"}"}}
            ]}),
        );
        let out = clear(&call, WireFormat::OpenAi, &what).unwrap();
        assert_eq!(out.raw["tool_calls"][0]["function"]["arguments"], "{}");
        assert_eq!(out.raw["tool_calls"][1], call.raw["tool_calls"][1]);
    }

    #[test]
    fn responses_outputs_and_arguments() {
        let what = Clearing {
            results: HashMap::from([("a", "[cleared]".to_string())]),
            inputs: HashSet::from(["a"]),
            ..Default::default()
        };
        let out = one(
            WireFormat::Responses,
            json!({"type": "function_call_output", "call_id": "a", "output": [{"type": "input_text", "text": "long"}], "id": "fco_1"}),
        );
        let cleared = clear(&out, WireFormat::Responses, &what).unwrap();
        assert_eq!(
            cleared.raw,
            json!({"type": "function_call_output", "call_id": "a", "output": "[cleared]", "id": "fco_1"})
        );
        assert_eq!(clear(&cleared, WireFormat::Responses, &what), None);
        let call = one(
            WireFormat::Responses,
            json!({"type": "custom_tool_call", "call_id": "a", "name": "apply_patch", "input": "*** Begin Patch"}),
        );
        assert_eq!(
            clear(&call, WireFormat::Responses, &what).unwrap().raw["input"],
            ""
        );
        let other = one(
            WireFormat::Responses,
            json!({"type": "function_call", "call_id": "b", "name": "f", "arguments": "{\"x\": 1}"}),
        );
        assert_eq!(clear(&other, WireFormat::Responses, &what), None);
    }
}
