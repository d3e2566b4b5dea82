//! Anthropic's thinking-prefix binding, emulated for the thinking tests:
//! the provider signs each thinking block over its prefix (the system
//! prompt, the tools and every message before it, `cache_control` ignored)
//! and refuses a block whose prefix has changed since.

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use condense::thread::{self, RawThread, Thread, WireFormat};

pub const SYSTEM: &str = "You are a coding agent.";

pub fn tools() -> Value {
    json!([{"name": "bash", "description": "run", "input_schema": {"type": "object"}}])
}

fn strip_cache_control(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| *k != "cache_control")
                .map(|(k, v)| (k.clone(), strip_cache_control(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(strip_cache_control).collect()),
        other => other.clone(),
    }
}

/// The signature a block at the head of the message after `messages` gets.
pub fn prefix(messages: &[Value]) -> String {
    let p = strip_cache_control(&json!({"system": SYSTEM, "tools": tools(), "messages": messages}));
    format!("{:x}", Sha256::digest(p.to_string().as_bytes()))
}

pub fn is_thinking(b: &Value) -> bool {
    matches!(b["type"].as_str(), Some("thinking" | "redacted_thinking"))
}

/// An Anthropic thread of `messages` under [`SYSTEM`] and [`tools`].
pub fn parse(messages: &[Value]) -> Thread {
    thread::parse(RawThread {
        format: Some(WireFormat::Anthropic),
        messages,
        system: Some(&json!(SYSTEM)),
        tools: Some(&tools()),
    })
    .expect("the generated thread is valid")
}
