//! Agent conversations described once, at the model level, and rendered
//! into each wire format: the clearing tests run the same conversation in
//! every format. A new format is one more [`Wire`] implementation.

use serde_json::{Value, json};

use condense::thread::WireFormat;

#[derive(Debug, Clone)]
pub struct Call {
    pub name: String,
    /// The command the call runs (its input).
    pub input: String,
    pub output: String,
    pub error: bool,
}

#[derive(Debug, Clone)]
pub enum Turn {
    User(String),
    /// `thinking` only shows in formats that carry it.
    Assistant {
        thinking: Option<String>,
        text: String,
    },
    /// An assistant message of parallel calls, then their results.
    Tools {
        thinking: Option<String>,
        calls: Vec<Call>,
    },
}

/// A conversation; `pending` leaves the last tool round without results.
#[derive(Debug, Clone)]
pub struct Conversation {
    pub turns: Vec<Turn>,
    pub pending: bool,
}

/// One wire format: rendering, and finding a tool use's call and result.
pub trait Wire {
    fn format(&self) -> WireFormat;
    /// The request body's thread: `format`, `messages` (and `system`).
    fn render(&self, c: &Conversation) -> Value;
    /// The JSON of the call with this id, and of its result (None while pending).
    fn find(&self, messages: &[Value], id: &str) -> (Option<Value>, Option<Value>);
    /// The thinking blocks of message `i` (empty where the format has none).
    fn thinking(&self, m: &Value) -> Vec<Value>;
    /// The request's (and answer's) fields that hold the thread and its
    /// top-level instructions.
    fn keys(&self) -> (&'static str, &'static str) {
        ("messages", "system")
    }
}

pub struct OpenAi;
pub struct Anthropic;
pub struct Responses;

pub fn wires() -> [&'static dyn Wire; 3] {
    [&OpenAi, &Anthropic, &Responses]
}

/// The id of the `n`th call (from 0) of a conversation, in every format.
pub fn id(n: usize) -> String {
    format!("call_{n}")
}

fn calls_with_ids(c: &Conversation) -> Vec<(usize, &Turn, Vec<String>)> {
    let mut next = 0;
    c.turns
        .iter()
        .enumerate()
        .map(|(k, t)| {
            let ids = match t {
                Turn::Tools { calls, .. } => calls
                    .iter()
                    .map(|_| {
                        next += 1;
                        id(next - 1)
                    })
                    .collect(),
                _ => Vec::new(),
            };
            (k, t, ids)
        })
        .collect()
}

impl Wire for OpenAi {
    fn format(&self) -> WireFormat {
        WireFormat::OpenAi
    }

    fn render(&self, c: &Conversation) -> Value {
        let mut out = vec![json!({"role": "system", "content": "You are an agent.", "x": 1})];
        let last = c.turns.len().saturating_sub(1);
        for (k, t, ids) in calls_with_ids(c) {
            match t {
                Turn::User(s) => out.push(json!({"role": "user", "content": s})),
                Turn::Assistant { text, .. } => {
                    out.push(json!({"role": "assistant", "content": text}))
                }
                Turn::Tools { calls, .. } => {
                    out.push(json!({"role": "assistant", "content": null, "tool_calls":
                        ids.iter().zip(calls).map(|(i, call)| json!({"id": i, "type": "function",
                            "function": {"name": call.name, "arguments": json!({"command": call.input}).to_string()}}))
                        .collect::<Vec<_>>()}));
                    if c.pending && k == last {
                        continue;
                    }
                    for (i, call) in ids.iter().zip(calls) {
                        out.push(json!({"role": "tool", "tool_call_id": i, "content": call.output, "x": 2}));
                    }
                }
            }
        }
        json!({"format": "openai", "messages": out})
    }

    fn find(&self, messages: &[Value], id: &str) -> (Option<Value>, Option<Value>) {
        let call = messages
            .iter()
            .filter_map(|m| m["tool_calls"].as_array())
            .flatten()
            .find(|c| c["id"] == id)
            .cloned();
        let result = messages
            .iter()
            .find(|m| m["role"] == "tool" && m["tool_call_id"] == id)
            .cloned();
        (call, result)
    }

    fn thinking(&self, _: &Value) -> Vec<Value> {
        Vec::new()
    }
}

impl Wire for Anthropic {
    fn format(&self) -> WireFormat {
        WireFormat::Anthropic
    }

    fn render(&self, c: &Conversation) -> Value {
        let mut out = Vec::new();
        let last = c.turns.len().saturating_sub(1);
        let think = |blocks: &mut Vec<Value>, thinking: &Option<String>, k: usize| {
            if let Some(t) = thinking {
                blocks.push(
                    json!({"type": "thinking", "thinking": t, "signature": format!("sig-{k}")}),
                );
                if k.is_multiple_of(3) {
                    blocks.push(
                        json!({"type": "redacted_thinking", "data": format!("ZW5jcnlwdGVk{k}")}),
                    );
                }
            }
        };
        for (k, t, ids) in calls_with_ids(c) {
            match t {
                Turn::User(s) => out.push(json!({"role": "user", "content": s})),
                Turn::Assistant { thinking, text } => {
                    let mut blocks = Vec::new();
                    think(&mut blocks, thinking, k);
                    blocks.push(json!({"type": "text", "text": text}));
                    out.push(json!({"role": "assistant", "content": blocks}));
                }
                Turn::Tools { thinking, calls } => {
                    let mut blocks = Vec::new();
                    think(&mut blocks, thinking, k);
                    for (i, call) in ids.iter().zip(calls) {
                        blocks.push(json!({"type": "tool_use", "id": i, "name": call.name, "input": {"command": call.input}}));
                    }
                    out.push(json!({"role": "assistant", "content": blocks}));
                    if c.pending && k == last {
                        continue;
                    }
                    out.push(json!({"role": "user", "content": ids.iter().zip(calls).map(|(i, call)| json!({
                        "type": "tool_result", "tool_use_id": i, "is_error": call.error,
                        "content": [{"type": "text", "text": call.output}]})).collect::<Vec<_>>()}));
                }
            }
        }
        json!({"format": "anthropic", "system": "You are an agent.", "messages": out})
    }

    fn find(&self, messages: &[Value], id: &str) -> (Option<Value>, Option<Value>) {
        let blocks = || {
            messages
                .iter()
                .filter_map(|m| m["content"].as_array())
                .flatten()
        };
        let call = blocks()
            .find(|b| b["type"] == "tool_use" && b["id"] == id)
            .cloned();
        let result = blocks()
            .find(|b| b["type"] == "tool_result" && b["tool_use_id"] == id)
            .cloned();
        (call, result)
    }

    fn thinking(&self, m: &Value) -> Vec<Value> {
        m["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|b| b["type"] == "thinking" || b["type"] == "redacted_thinking")
            .cloned()
            .collect()
    }
}

impl Wire for Responses {
    fn format(&self) -> WireFormat {
        WireFormat::Responses
    }

    /// Items; the thinking of a turn is a reasoning item before it.
    fn render(&self, c: &Conversation) -> Value {
        let mut out = Vec::new();
        let last = c.turns.len().saturating_sub(1);
        let think = |out: &mut Vec<Value>, thinking: &Option<String>, k: usize| {
            if let Some(t) = thinking {
                out.push(json!({"type": "reasoning", "id": format!("rs_{k}"),
                    "summary": [{"type": "summary_text", "text": t}], "encrypted_content": format!("gAAAA{k}")}));
            }
        };
        for (k, t, ids) in calls_with_ids(c) {
            match t {
                Turn::User(s) => out.push(
                    json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": s}]}),
                ),
                Turn::Assistant { thinking, text } => {
                    think(&mut out, thinking, k);
                    out.push(json!({"type": "message", "role": "assistant",
                        "content": [{"type": "output_text", "text": text}]}));
                }
                Turn::Tools { thinking, calls } => {
                    think(&mut out, thinking, k);
                    for (i, call) in ids.iter().zip(calls) {
                        out.push(json!({"type": "function_call", "call_id": i, "name": call.name,
                            "arguments": json!({"command": call.input}).to_string()}));
                    }
                    if c.pending && k == last {
                        continue;
                    }
                    for (i, call) in ids.iter().zip(calls) {
                        out.push(json!({"type": "function_call_output", "call_id": i, "output": call.output}));
                    }
                }
            }
        }
        json!({"format": "responses", "instructions": "You are an agent.", "input": out})
    }

    fn keys(&self) -> (&'static str, &'static str) {
        ("input", "instructions")
    }

    fn find(&self, messages: &[Value], id: &str) -> (Option<Value>, Option<Value>) {
        let item = |kind: &str| {
            messages
                .iter()
                .find(|m| m["type"] == kind && m["call_id"] == id)
                .cloned()
        };
        (item("function_call"), item("function_call_output"))
    }

    fn thinking(&self, m: &Value) -> Vec<Value> {
        match m["type"] == "reasoning" {
            true => vec![m.clone()],
            false => Vec::new(),
        }
    }
}
