//! The `provider` writer: the summary is the provider's own compaction item
//! (`/responses/compact`), stored as its JSON and put back byte for byte.
//! The span goes as Responses items rebuilt from its canonical form (so the
//! key, and the item, are the same whatever the wire ids); reasoning is left
//! out (encrypted and bound to the prefix it was produced after).

use serde_json::{Value, json};

use super::{SummaryRequest, UpstreamModel, Usage};
use crate::thread::{Message, Part, Role};
use crate::upstream::{Kind, Upstream, UpstreamError};

/// Compacts `req.span[from..]`, after `prior` (a compaction item's JSON, or
/// another writer's text); the answer is the item's JSON. Asked of the
/// request's target (the proxy's conversation's provider) if it has one,
/// else of the configured upstream `up`.
pub(super) async fn write(
    up: Option<&Upstream>,
    model: &UpstreamModel,
    req: &SummaryRequest,
    from: usize,
    prior: Option<String>,
) -> Result<(String, Usage), UpstreamError> {
    let target = req.target.clone();
    let target = target
        .or_else(|| up?.compact_target(&model.name))
        .ok_or_else(|| UpstreamError::Garbage("no provider to compact with".into()))?;
    let mut input: Vec<Value> = prior.as_deref().map(prior_item).into_iter().collect();
    for m in &req.span[from..] {
        items(m, &mut input);
    }
    let called = target.compact(&input).await;
    let mut usage = Usage {
        calls: called.attempts,
        upstream_ms: called.elapsed.as_millis() as u64,
        ..Usage::default()
    };
    let compacted = called.result?;
    usage.prompt_tokens = compacted.prompt_tokens;
    usage.completion_tokens = compacted.completion_tokens;
    Ok((compacted.item.to_string(), usage))
}

/// The writer's model when the conversation's provider compacts with
/// `name`: no window nor result limit shapes what it is shown (the span
/// goes whole), so none is keyed, whatever upstream is configured.
pub fn model(name: &str) -> UpstreamModel {
    UpstreamModel {
        name: name.to_string(),
        context_window: 0,
        result_chars: 0,
        kind: Kind::OpenAi,
    }
}

/// Whether `content` is a provider compaction item (a `provider` summary).
pub fn is_item(content: &str) -> bool {
    serde_json::from_str::<Value>(content)
        .is_ok_and(|v| v.get("type").and_then(Value::as_str) == Some("compaction"))
}

/// The summary this one extends, as an input item: a compaction item as it
/// is, another writer's text as a user message.
fn prior_item(prior: &str) -> Value {
    match serde_json::from_str::<Value>(prior) {
        Ok(item) if is_item(prior) => item,
        _ => json!({"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": format!("Summary of the earlier conversation:\n{prior}")}
        ]}),
    }
}

/// `m` as Responses items: its text as one message, each call and result
/// as its own item; thinking left out.
fn items(m: &Message, out: &mut Vec<Value>) {
    let (role, kind) = match m.role {
        Role::Assistant => ("assistant", "output_text"),
        Role::System => ("system", "input_text"),
        Role::Developer => ("developer", "input_text"),
        Role::User | Role::Tool | Role::Function => ("user", "input_text"),
    };
    let (mut text, mut rest) = (Vec::new(), Vec::new());
    for p in &m.parts {
        match p {
            Part::Text(t) | Part::Refusal(t) => text.push(t.clone()),
            Part::Opaque(o) => text.push(format!("({})", o.kind)),
            Part::Media(k) => text.push(format!("({k:?} attached)")),
            Part::Thinking(_) | Part::RedactedThinking(_) => {}
            Part::ToolCall(c) => rest.push(json!({"type": "function_call", "call_id": c.id, "name": c.name, "arguments": c.arguments})),
            Part::FunctionCall { name, arguments } => rest.push(json!({"type": "function_call", "call_id": "legacy", "name": name, "arguments": arguments})),
            Part::ToolResult(r) => {
                let mut texts = Vec::new();
                r.content.iter().for_each(|p| p.texts(&mut texts));
                rest.push(json!({"type": "function_call_output", "call_id": r.call_id, "output": texts.join("\n")}));
            }
        }
    }
    if !text.is_empty() {
        let content: Vec<Value> = text
            .into_iter()
            .map(|t| json!({"type": kind, "text": t}))
            .collect();
        out.push(json!({"type": "message", "role": role, "content": content}));
    }
    out.extend(rest);
}
