//! Changing messages in the caller's wire format: each edit rewrites the
//! caller's JSON (unknown fields stay) and parses it again (the model agrees).

use std::borrow::Cow;

use serde_json::{Value, json};

use super::parse::parse_items;
use super::{FieldError, Message, Role, WireFormat};

/// Which texts [`truncate_to`] may cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    /// Only the content of tool results.
    ToolResults,
    /// Any text: tool results, user and assistant text.
    AnyText,
    /// Only the text a user wrote (not the tool results a user turn carries).
    UserText,
    /// Only the text an assistant wrote (not its tool calls or thinking).
    AssistantText,
}

/// Which end of a long text a cut keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    Head,
    Tail,
    Both,
}

/// `s` cut to at most `limit` characters, marker included (so a cut text is
/// never cut again by the same limit); None when it is not longer.
pub fn cut_to(s: &str, limit: usize, keep: Keep) -> Option<String> {
    let n = s.chars().count();
    if n <= limit {
        return None;
    }
    // The marker's length depends on how much is removed: settle it.
    let mut kept = limit;
    let marker = loop {
        let marker = format!("…[truncated {} characters]…", thousands((n - kept) as u64));
        let fits = kept + marker.chars().count() <= limit;
        if fits || kept == 0 {
            break marker;
        }
        kept = limit.saturating_sub(marker.chars().count());
    };
    let (head, tail) = match keep {
        Keep::Head => (kept, 0),
        Keep::Tail => (0, kept),
        Keep::Both => (kept / 2, kept - kept / 2),
    };
    let head: String = s.chars().take(head).collect();
    let tail: String = s.chars().skip(n - tail).collect();
    Some(format!("{head}{marker}{tail}"))
}

/// `1234567` as `1,234,567`.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The message with every text `cut` allows cut by [`cut_to`], if any was.
pub fn truncate_to(
    m: &Message,
    format: WireFormat,
    cut: Cut,
    limit: usize,
    keep: Keep,
) -> Option<Message> {
    let mut raw = m.raw.clone();
    let mut changed = false;
    let mut shorten = |v: &mut Value| {
        if let Value::String(s) = v
            && let Some(short) = cut_to(s, limit, keep)
        {
            *s = short;
            changed = true;
        }
    };
    let any = cut == Cut::AnyText;
    let results = matches!(cut, Cut::ToolResults | Cut::AnyText);
    // The author's own text: a user's (UserText) or an assistant's (AssistantText).
    let user = (cut == Cut::UserText && m.role == Role::User)
        || (cut == Cut::AssistantText && m.role == Role::Assistant);
    match format {
        WireFormat::OpenAi => {
            let is_result = m.role == Role::Tool || m.role == Role::Function;
            if (is_result && results) || any || user {
                visit_texts(raw.get_mut("content"), &mut shorten);
            }
        }
        WireFormat::Anthropic => {
            if any || user {
                visit_texts(raw.get_mut("content"), &mut shorten);
            }
            let blocks = raw.get_mut("content").and_then(Value::as_array_mut);
            for b in blocks.into_iter().flatten().filter(|_| results) {
                if b.get("type").and_then(Value::as_str) == Some("tool_result") {
                    visit_texts(b.get_mut("content"), &mut shorten);
                }
            }
        }
        WireFormat::Responses => {
            let is_result = m.role == Role::Tool;
            if is_result && results {
                visit_texts(raw.get_mut("output"), &mut shorten);
            } else if !m.is_item() && (any || user) {
                visit_texts(raw.get_mut("content"), &mut shorten);
            }
        }
    }
    if !changed {
        return None;
    }
    reparse(raw, format).ok()
}

/// A string content, or the `text` of each text part in an array.
fn visit_texts(content: Option<&mut Value>, f: &mut impl FnMut(&mut Value)) {
    match content {
        Some(v @ Value::String(_)) => f(v),
        Some(Value::Array(parts)) => {
            for p in parts {
                let kind = p.get("type").and_then(Value::as_str);
                if matches!(kind, Some("text" | "input_text" | "output_text"))
                    && let Some(t) = p.get_mut("text")
                {
                    f(t);
                }
            }
        }
        _ => {}
    }
}

/// A new message holding `text`, in the caller's format.
pub fn text_message(format: WireFormat, role: Role, text: String) -> Message {
    let raw = json!({"role": role.as_str(), "content": text});
    reparse(raw, format).expect("a role/content message is valid in every format")
}

/// One message of `format`, parsed as a thread of one.
pub(super) fn reparse(raw: Value, format: WireFormat) -> Result<Message, Vec<FieldError>> {
    let (_, mut parsed) = parse_items(format, None, vec![Cow::Owned(raw)])?;
    Ok(parsed.pop().expect("one message in, one out"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn middle_cut_keeps_both_ends_and_says_how_much() {
        let s = "a".repeat(10) + &"b".repeat(20_000) + &"c".repeat(10);
        let marker = "…[truncated 20,000 characters]…";
        let out = cut_to(&s, 20 + marker.chars().count(), Keep::Both).unwrap();
        assert!(out.starts_with("aaaaaaaaaa"));
        assert!(out.ends_with("cccccccccc"));
        assert!(out.contains(marker));
        assert_eq!(cut_to("short", 20, Keep::Both), None);
    }

    #[test]
    fn a_rule_cut_fits_its_limit_and_is_never_cut_again() {
        // x and z: letters the marker does not hold.
        let s = "x".repeat(300) + &"m".repeat(10_000) + &"z".repeat(300);
        for keep in [Keep::Head, Keep::Tail, Keep::Both] {
            for limit in [64, 500, 999, 1000, 5000] {
                let out = cut_to(&s, limit, keep).unwrap();
                assert!(out.chars().count() <= limit, "{keep:?} {limit}");
                assert!(out.contains("characters]…"));
                assert_eq!(cut_to(&out, limit, keep), None, "{keep:?} {limit}");
            }
        }
        let head = cut_to(&s, 500, Keep::Head).unwrap();
        assert!(head.starts_with(&"x".repeat(300)) && !head.contains('z'));
        let tail = cut_to(&s, 500, Keep::Tail).unwrap();
        assert!(tail.ends_with(&"z".repeat(300)) && !tail.contains('x'));
        assert_eq!(cut_to("short", 64, Keep::Both), None);
    }

    #[test]
    fn truncation_keeps_unknown_fields_and_touches_only_results() {
        let raw = json!({"role": "tool", "tool_call_id": "a", "content": "x".repeat(1000), "extra": {"k": 1}});
        let m = reparse(raw, WireFormat::OpenAi).unwrap();
        let t = truncate_to(&m, WireFormat::OpenAi, Cut::ToolResults, 100, Keep::Both).unwrap();
        assert_eq!(t.raw["extra"], json!({"k": 1}));
        assert!(t.raw["content"].as_str().unwrap().len() < 200);

        let raw = json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t", "content": [{"type": "text", "text": "y".repeat(1000)}]},
            {"type": "text", "text": "z".repeat(1000), "cache_control": {"type": "ephemeral"}}
        ]});
        let m = reparse(raw.clone(), WireFormat::Anthropic).unwrap();
        let t = truncate_to(&m, WireFormat::Anthropic, Cut::ToolResults, 100, Keep::Both).unwrap();
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
        let t = truncate_to(&m, WireFormat::Anthropic, Cut::AnyText, 100, Keep::Both).unwrap();
        assert_eq!(
            t.raw["content"][1]["cache_control"],
            json!({"type": "ephemeral"})
        );
    }
}
