//! The body sent to a provider's counting endpoint: the thread as it came, but
//! Chat Completions rewritten as Responses ([`chat_to_responses`]); what that
//! cannot express exactly is not counted.

use serde_json::{Map, Value, json};

use crate::thread::{Thread, WireFormat, echo};
use crate::upstream::Kind;

/// The API and the JSON body that counts `thread` for `model`.
pub fn body(thread: &Thread, model: &str) -> Result<(Kind, Value), String> {
    let system = thread.system.as_ref().map(|s| s.raw.clone());
    let raw = || thread.messages.iter().map(|m| m.raw.clone()).collect();
    let tools = || thread.tools.clone();
    match thread.format {
        WireFormat::Anthropic => Ok((
            Kind::Anthropic,
            request(model, ["system", "messages"], system, raw(), tools()),
        )),
        // Already in this endpoint's shape: sent as it came.
        WireFormat::Responses => Ok((
            Kind::OpenAi,
            request(model, RESPONSES, system, raw(), tools()),
        )),
        WireFormat::OpenAi => {
            let raw: Vec<&Value> = thread.messages.iter().map(|m| &m.raw).collect();
            let (input, tools) = chat_to_responses(&raw, &thread.tools)?;
            Ok((Kind::OpenAi, request(model, RESPONSES, None, input, tools)))
        }
    }
}

/// The Responses API's names of the system prompt and the items.
const RESPONSES: [&str; 2] = ["instructions", "input"];

/// `{model, <system>?, <items>, tools?}`, with the endpoint's names.
fn request(
    model: &str,
    [system_key, items_key]: [&str; 2],
    system: Option<Value>,
    items: Vec<Value>,
    tools: Vec<Value>,
) -> Value {
    let mut b = Map::new();
    b.insert("model".into(), json!(model));
    if let Some(s) = system {
        b.insert(system_key.into(), s);
    }
    b.insert(items_key.into(), Value::Array(items));
    if !tools.is_empty() {
        b.insert("tools".into(), Value::Array(tools));
    }
    Value::Object(b)
}

/// Chat Completions messages and tools as Responses items (typed: llama-server
/// needs it) and function tools; anything else is an error naming it.
fn chat_to_responses(
    messages: &[&Value],
    tools: &[Value],
) -> Result<(Vec<Value>, Vec<Value>), String> {
    let mut input = Vec::with_capacity(messages.len());
    for (i, m) in messages.iter().enumerate() {
        message_items(m, &mut input).map_err(|e| format!("messages[{i}]: {e}"))?;
    }
    let tools = tools
        .iter()
        .enumerate()
        .map(|(i, t)| function_tool(t).map_err(|e| format!("tools[{i}]: {e}")))
        .collect::<Result<_, _>>()?;
    Ok((input, tools))
}

fn message_items(m: &Value, out: &mut Vec<Value>) -> Result<(), String> {
    let role = m.get("role").and_then(Value::as_str).unwrap_or_default();
    match role {
        "system" | "developer" | "user" => {
            let content = user_content(m.get("content"))?;
            out.push(json!({"type": "message", "role": role, "content": content}));
        }
        "assistant" => {
            let text = joined_text(m.get("content"), true)?;
            let refusal = m.get("refusal").and_then(Value::as_str).unwrap_or_default();
            let text = [text.as_str(), refusal].concat();
            if !text.is_empty() {
                out.push(json!({"type": "message", "role": "assistant", "content": text}));
            }
            if m.get("function_call").is_some_and(|f| !f.is_null()) {
                return Err("the legacy `function_call` has no Responses form".into());
            }
            let calls = m.get("tool_calls").and_then(Value::as_array);
            for call in calls.into_iter().flatten() {
                // Untyped is a function call, as the thread parser reads it.
                let function = matches!(part_type(call), "untyped" | "function");
                let f = call
                    .get("function")
                    .filter(|_| function)
                    .ok_or("a tool call that is not a function call")?;
                out.push(json!({
                    "type": "function_call",
                    "call_id": call.get("id"),
                    "name": f.get("name"),
                    "arguments": f.get("arguments").cloned().unwrap_or(json!("")),
                }));
            }
        }
        "tool" => out.push(json!({
            "type": "function_call_output",
            "call_id": m.get("tool_call_id"),
            "output": joined_text(m.get("content"), false)?,
        })),
        other => return Err(format!("the `{}` role has no Responses form", echo(other))),
    }
    Ok(())
}

/// A user-side content: a string stays one; parts become input parts.
fn user_content(content: Option<&Value>) -> Result<Value, String> {
    match content {
        None | Some(Value::Null) => Ok(json!("")),
        Some(Value::String(s)) => Ok(json!(s)),
        Some(Value::Array(parts)) => parts
            .iter()
            .map(|p| match part_type(p) {
                "text" => Ok(json!({"type": "input_text", "text": p.get("text")})),
                "image_url" => {
                    let image = p.get("image_url");
                    let url = image.and_then(|i| i.get("url")).or(image);
                    let mut item = json!({"type": "input_image", "image_url": url});
                    if let Some(d) = image.and_then(|i| i.get("detail")) {
                        item["detail"] = d.clone();
                    }
                    Ok(item)
                }
                other => Err(no_form(other)),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Value::Array),
        Some(_) => Err("`content` is neither a string nor parts".into()),
    }
}

/// The texts of an assistant (with refusals) or tool content, joined.
fn joined_text(content: Option<&Value>, refusals: bool) -> Result<String, String> {
    match content {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(Value::Array(parts)) => {
            let mut text = String::new();
            for p in parts {
                let field = match part_type(p) {
                    "text" => "text",
                    "refusal" if refusals => "refusal",
                    other => return Err(no_form(other)),
                };
                text.push_str(p.get(field).and_then(Value::as_str).unwrap_or_default());
            }
            Ok(text)
        }
        Some(_) => Err("`content` is neither a string nor parts".into()),
    }
}

fn no_form(part_type: &str) -> String {
    format!("a `{}` part has no Responses form here", echo(part_type))
}

fn part_type(p: &Value) -> &str {
    p.get("type").and_then(Value::as_str).unwrap_or("untyped")
}

fn function_tool(t: &Value) -> Result<Value, String> {
    let f = t
        .get("function")
        .filter(|_| t.get("type").and_then(Value::as_str) == Some("function"))
        .ok_or("only function tools have a Responses form here")?;
    let mut tool = Map::new();
    tool.insert("type".into(), json!("function"));
    for key in ["name", "description", "parameters", "strict"] {
        if let Some(v) = f.get(key) {
            tool.insert(key.into(), v.clone());
        }
    }
    Ok(Value::Object(tool))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn convert(messages: Value, tools: Value) -> Result<(Vec<Value>, Vec<Value>), String> {
        let messages: Vec<Value> = serde_json::from_value(messages).unwrap();
        let refs: Vec<&Value> = messages.iter().collect();
        chat_to_responses(&refs, tools.as_array().unwrap())
    }

    #[test]
    fn text_messages_become_easy_messages() {
        let (input, tools) = convert(
            json!([
                {"role": "system", "content": "Be brief."},
                {"role": "developer", "content": [{"type": "text", "text": "Use tabs."}]},
                {"role": "user", "content": "hi", "name": "ann"},
                {"role": "assistant", "content": [{"type": "text", "text": "he"}, {"type": "text", "text": "llo"}]},
            ]),
            json!([]),
        )
        .unwrap();
        assert_eq!(
            input,
            vec![
                json!({"type": "message", "role": "system", "content": "Be brief."}),
                json!({"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "Use tabs."}]}),
                json!({"type": "message", "role": "user", "content": "hi"}),
                json!({"type": "message", "role": "assistant", "content": "hello"}),
            ]
        );
        assert!(tools.is_empty());
    }

    #[test]
    fn tool_calls_and_results_become_function_items() {
        let (input, tools) = convert(
            json!([
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{\"p\":\".\"}"}},
                    {"id": "c2", "function": {"name": "cat", "arguments": "{}"}},
                ]},
                {"role": "tool", "tool_call_id": "c1", "content": "a b"},
                {"role": "tool", "tool_call_id": "c2", "content": [{"type": "text", "text": "x"}, {"type": "text", "text": "y"}]},
            ]),
            json!([{"type": "function", "function": {"name": "ls", "description": "List.", "parameters": {"type": "object"}}}]),
        )
        .unwrap();
        assert_eq!(
            input,
            vec![
                json!({"type": "function_call", "call_id": "c1", "name": "ls", "arguments": "{\"p\":\".\"}"}),
                json!({"type": "function_call", "call_id": "c2", "name": "cat", "arguments": "{}"}),
                json!({"type": "function_call_output", "call_id": "c1", "output": "a b"}),
                json!({"type": "function_call_output", "call_id": "c2", "output": "xy"}),
            ]
        );
        assert_eq!(
            tools,
            vec![
                json!({"type": "function", "name": "ls", "description": "List.", "parameters": {"type": "object"}})
            ]
        );
    }

    #[test]
    fn an_assistant_text_comes_before_its_calls() {
        let (input, _) = convert(
            json!([{"role": "assistant", "content": "Looking.", "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
            ]}]),
            json!([]),
        )
        .unwrap();
        assert_eq!(
            input[0],
            json!({"type": "message", "role": "assistant", "content": "Looking."})
        );
        assert_eq!(input[1]["type"], "function_call");
    }

    #[test]
    fn images_become_input_images() {
        let (input, _) = convert(
            json!([{"role": "user", "content": [
                {"type": "image_url", "image_url": {"url": "https://x/y.png", "detail": "low"}}
            ]}]),
            json!([]),
        )
        .unwrap();
        assert_eq!(
            input[0]["content"][0],
            json!({"type": "input_image", "image_url": "https://x/y.png", "detail": "low"})
        );
    }

    #[test]
    fn what_has_no_responses_form_is_named() {
        let audio = convert(
            json!([{"role": "user", "content": [{"type": "input_audio", "input_audio": {}}]}]),
            json!([]),
        );
        assert_eq!(
            audio.unwrap_err(),
            "messages[0]: a `input_audio` part has no Responses form here"
        );
        let legacy = convert(
            json!([{"role": "function", "name": "f", "content": "1"}]),
            json!([]),
        );
        assert!(legacy.unwrap_err().contains("`function` role"));
        let custom = convert(
            json!([]),
            json!([{"type": "custom", "custom": {"name": "x"}}]),
        );
        assert!(custom.unwrap_err().starts_with("tools[0]"));
    }

    #[test]
    fn responses_body_leaves_out_what_is_empty() {
        assert_eq!(
            request(
                "m",
                RESPONSES,
                None,
                vec![json!({"role": "user", "content": "hi"})],
                vec![]
            ),
            json!({"model": "m", "input": [{"role": "user", "content": "hi"}]})
        );
        assert_eq!(
            request(
                "m",
                RESPONSES,
                Some(json!("Be brief.")),
                vec![],
                vec![json!({"type": "function"})]
            )["instructions"],
            "Be brief."
        );
    }
}
