//! Changing messages on the way out, in the caller's wire format: new summary
//! messages and long texts cut in the middle. Each edit rewrites the caller's
//! JSON (so unknown fields stay) and parses it again (so the model agrees).

use serde_json::{Value, json};

use super::{FieldError, Message, Role, WireFormat, anthropic, openai};

/// Which texts [`truncate`] may cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    /// Only the content of tool results.
    ToolResults,
    /// Any text: tool results, user and assistant text.
    AnyText,
}

/// Cuts `s` to about `keep` characters by removing its middle, with a visible marker.
pub fn cut_middle(s: &str, keep: usize) -> Option<String> {
    let n = s.chars().count();
    if n <= keep {
        return None;
    }
    let head = keep / 2;
    let tail = keep - head;
    let removed = n - keep;
    let start: String = s.chars().take(head).collect();
    let end: String = s.chars().skip(n - tail).collect();
    Some(format!(
        "{start}…[truncated {} characters]…{end}",
        thousands(removed as u64)
    ))
}

/// `1234567` as `1,234,567`.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The message with every cuttable text longer than `keep` characters cut;
/// None when nothing was that long.
pub fn truncate(m: &Message, format: WireFormat, cut: Cut, keep: usize) -> Option<Message> {
    let mut raw = m.raw.clone();
    let mut changed = false;
    let mut shorten = |v: &mut Value| {
        if let Value::String(s) = v {
            if let Some(short) = cut_middle(s, keep) {
                *s = short;
                changed = true;
            }
        }
    };
    let any = cut == Cut::AnyText;
    match format {
        WireFormat::OpenAi => {
            let is_result = m.role == Role::Tool || m.role == Role::Function;
            if is_result || any {
                visit_texts(raw.get_mut("content"), &mut shorten);
            }
        }
        WireFormat::Anthropic => match raw.get_mut("content") {
            Some(v @ Value::String(_)) if any => shorten(v),
            Some(Value::Array(blocks)) => {
                for b in blocks {
                    match b.get("type").and_then(Value::as_str) {
                        Some("tool_result") => visit_texts(b.get_mut("content"), &mut shorten),
                        Some("text") if any => {
                            shorten(b.get_mut("text").unwrap_or(&mut Value::Null))
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        },
    }
    if !changed {
        return None;
    }
    reparse(raw, format, m.role).ok()
}

/// A string content, or the `text` of each text part/block in an array.
fn visit_texts(content: Option<&mut Value>, f: &mut impl FnMut(&mut Value)) {
    match content {
        Some(v @ Value::String(_)) => f(v),
        Some(Value::Array(parts)) => {
            for p in parts {
                if p.get("type").and_then(Value::as_str) == Some("text") {
                    if let Some(t) = p.get_mut("text") {
                        f(t);
                    }
                }
            }
        }
        _ => {}
    }
}

/// A new message holding `text`, in the caller's format.
pub fn text_message(format: WireFormat, role: Role, text: String) -> Message {
    let raw = json!({"role": role.as_str(), "content": text});
    reparse(raw, format, role).expect("a role/content message is valid in both formats")
}

fn reparse(raw: Value, format: WireFormat, role: Role) -> Result<Message, Vec<FieldError>> {
    let mut parsed = match format {
        WireFormat::OpenAi => openai::parse_messages(std::slice::from_ref(&raw))?,
        WireFormat::Anthropic => anthropic::parse_thread(None, std::slice::from_ref(&raw))?.1,
    };
    let m = parsed.pop().expect("one message in, one out");
    debug_assert_eq!(m.role, role);
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn middle_cut_keeps_both_ends_and_says_how_much() {
        let s = "a".repeat(10) + &"b".repeat(20_000) + &"c".repeat(10);
        let out = cut_middle(&s, 20).unwrap();
        assert!(out.starts_with("aaaaaaaaaa"));
        assert!(out.ends_with("cccccccccc"));
        assert!(out.contains("…[truncated 20,000 characters]…"));
        assert_eq!(cut_middle("short", 20), None);
    }

    #[test]
    fn truncation_keeps_unknown_fields_and_touches_only_results() {
        let raw = json!({"role": "tool", "tool_call_id": "a", "content": "x".repeat(1000), "extra": {"k": 1}});
        let m = openai::parse_messages(std::slice::from_ref(&raw))
            .unwrap()
            .pop()
            .unwrap();
        let t = truncate(&m, WireFormat::OpenAi, Cut::ToolResults, 100).unwrap();
        assert_eq!(t.raw["extra"], json!({"k": 1}));
        assert!(t.raw["content"].as_str().unwrap().len() < 200);

        let raw = json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t", "content": [{"type": "text", "text": "y".repeat(1000)}]},
            {"type": "text", "text": "z".repeat(1000), "cache_control": {"type": "ephemeral"}}
        ]});
        let m = anthropic::parse_thread(None, std::slice::from_ref(&raw))
            .unwrap()
            .1
            .pop()
            .unwrap();
        let t = truncate(&m, WireFormat::Anthropic, Cut::ToolResults, 100).unwrap();
        assert!(
            t.raw["content"][0]["content"][0]["text"]
                .as_str()
                .unwrap()
                .len()
                < 200
        );
        assert_eq!(
            t.raw["content"][1], raw["content"][1],
            "user text is left alone"
        );
        let t = truncate(&m, WireFormat::Anthropic, Cut::AnyText, 100).unwrap();
        assert_eq!(
            t.raw["content"][1]["cache_control"],
            json!({"type": "ephemeral"})
        );
    }
}
