//! Clearing in the caller's wire format: old tool results become a
//! placeholder text, old tool inputs an empty object, old thinking blocks
//! go. Like [`super::edit`], each change rewrites the caller's JSON (every
//! other field stays value for value: `is_error`, `cache_control`, a kept
//! thinking block's signature) and parses it again, so the model agrees.
//!
//! A cleared result is still a result: the pairing of calls and results,
//! which the providers check, is unchanged.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use super::edit::reparse;
use super::{Message, WireFormat};

/// What to clear in one message.
#[derive(Debug, Default)]
pub struct Clearing<'a> {
    /// Results by the call id they answer -> the placeholder that replaces their content.
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
    reparse(raw, format, m.role).ok()
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
    if let Some(calls) = raw.get_mut("tool_calls").and_then(Value::as_array_mut) {
        for call in calls {
            let clear = call
                .get("id")
                .and_then(Value::as_str)
                .is_some_and(|id| what.inputs.contains(id));
            if let Some(args) = call
                .get_mut("function")
                .and_then(|f| f.get_mut("arguments"))
                && clear
            {
                changed |= set(args, Value::String("{}".into()));
            }
            // A custom tool's free-form input has no empty object: empty text.
            if let Some(input) = call.get_mut("custom").and_then(|f| f.get_mut("input"))
                && clear
            {
                changed |= set(input, Value::String(String::new()));
            }
        }
    }
    changed
}

/// A Responses item: a call's output becomes the placeholder, a call's
/// `arguments` `{}` (a custom tool's `input` empty text). A reasoning item
/// is never removed: OpenAI refuses an output item (a `function_call` or
/// `message` with its `fc_`/`msg_` id) sent without the reasoning item
/// that produced it, so `thinking` changes nothing here.
fn responses(raw: &mut Value, what: &Clearing<'_>) -> bool {
    let id = raw
        .get("call_id")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let Some(id) = id else { return false };
    let kind = raw.get("type").and_then(Value::as_str).unwrap_or_default();
    let mut changed = false;
    if kind.ends_with("_output") {
        if let (Some(p), Some(output)) = (what.results.get(id.as_str()), raw.get_mut("output")) {
            changed |= set(output, Value::String(p.clone()));
        }
    } else if what.inputs.contains(id.as_str()) {
        let (key, empty) = match kind {
            "custom_tool_call" => ("input", ""),
            _ => ("arguments", "{}"),
        };
        if let Some(v) = raw.get_mut(key) {
            changed |= set(v, Value::String(empty.into()));
        }
    }
    changed
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
    use std::borrow::Cow;

    use serde_json::json;

    use super::*;
    use crate::thread::{Part, anthropic, openai, responses};

    fn one(format: WireFormat, raw: Value) -> Message {
        match format {
            WireFormat::OpenAi => openai::parse_messages(vec![Cow::Owned(raw)]),
            WireFormat::Anthropic => {
                anthropic::parse_thread(None, vec![Cow::Owned(raw)]).map(|t| t.1)
            }
            WireFormat::Responses => {
                responses::parse_thread(None, vec![Cow::Owned(raw)]).map(|t| t.1)
            }
        }
        .unwrap()
        .pop()
        .unwrap()
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
