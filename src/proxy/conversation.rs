//! Which conversation a proxied request belongs to: the name the ledger of
//! what the provider billed is kept under (`x-condense-conversation`).
//!
//! condense keeps no session, so the name comes from the request itself,
//! the same every turn: the key the client gives its own conversation where
//! it gives one (the Responses API's `prompt_cache_key`, which Codex sets
//! to its session, and Anthropic's `metadata.user_id`, which Claude Code
//! fills with its session), else the conversation's opening: its pinned
//! instructions and first message, as read (so a `cache_control` marker
//! moving from turn to turn changes nothing). Two sessions that open with
//! the same words and give no key share a name; a client that compacts its
//! own history starts a new one.

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::thread::{Thread, WireFormat};

/// The conversation's name: 32 hex digits.
pub fn id(format: WireFormat, json: &Value, thread: &Thread) -> String {
    let mut h = Sha256::new();
    let mut field = |tag: &str, value: &str| {
        for part in [tag, value] {
            h.update((part.len() as u64).to_le_bytes());
            h.update(part.as_bytes());
        }
    };
    field("format", format.as_str());
    let key = match format {
        WireFormat::Responses | WireFormat::OpenAi => json.get("prompt_cache_key"),
        WireFormat::Anthropic => json.pointer("/metadata/user_id"),
    };
    match key.and_then(Value::as_str).filter(|k| !k.is_empty()) {
        Some(key) => field("key", key),
        None => {
            let opening = thread.messages.iter().take(thread.pinned_len() + 1);
            for m in thread.system.iter().chain(opening) {
                field("role", m.role.as_str());
                let mut texts = Vec::new();
                m.parts.iter().for_each(|p| p.texts(&mut texts));
                texts.iter().for_each(|t| field("text", t));
            }
        }
    }
    let digest = h.finalize();
    digest[..16].iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::id;
    use crate::thread::{RawThread, WireFormat, parse};

    fn named(format: WireFormat, body: serde_json::Value) -> String {
        let (field, system) = match format {
            WireFormat::Anthropic => ("messages", Some("system")),
            WireFormat::Responses => ("input", Some("instructions")),
            WireFormat::OpenAi => ("messages", None),
        };
        let thread = parse(RawThread {
            format: Some(format),
            messages: body[field].as_array().unwrap(),
            system: system.and_then(|s| body.get(s)),
            tools: None,
        })
        .expect("a thread");
        id(format, &body, &thread)
    }

    fn anthropic(messages: serde_json::Value, user: Option<&str>) -> serde_json::Value {
        let mut body =
            json!({"model": "m", "max_tokens": 9, "system": "be brief", "messages": messages});
        if let Some(u) = user {
            body["metadata"] = json!({"user_id": u});
        }
        body
    }

    #[test]
    fn the_same_every_turn_and_apart_from_other_openings() {
        let turn1 = json!([{"role": "user", "content": [{"type": "text", "text": "fix the bug", "cache_control": {"type": "ephemeral"}}]}]);
        let turn2 = json!([
            {"role": "user", "content": [{"type": "text", "text": "fix the bug"}]},
            {"role": "assistant", "content": "done"},
            {"role": "user", "content": [{"type": "text", "text": "thanks", "cache_control": {"type": "ephemeral"}}]},
        ]);
        let other = json!([{"role": "user", "content": "fix the other bug"}]);
        let a = WireFormat::Anthropic;
        let first = named(a, anthropic(turn1, None));
        assert_eq!(first.len(), 32);
        assert_eq!(first, named(a, anthropic(turn2.clone(), None)));
        assert_ne!(first, named(a, anthropic(other, None)));
        let mut other_system = anthropic(turn2, None);
        other_system["system"] = json!("be thorough");
        assert_ne!(first, named(a, other_system));
    }

    #[test]
    fn the_clients_own_key_names_it_whatever_the_opening() {
        let a = WireFormat::Anthropic;
        let hi = json!([{"role": "user", "content": "hi"}]);
        let bye = json!([{"role": "user", "content": "bye"}]);
        let s1 = "user_x_account__session_1";
        assert_eq!(
            named(a, anthropic(hi.clone(), Some(s1))),
            named(a, anthropic(bye, Some(s1)))
        );
        assert_ne!(
            named(a, anthropic(hi.clone(), Some(s1))),
            named(a, anthropic(hi, Some("user_x_account__session_2")))
        );
        let r = WireFormat::Responses;
        let responses = |key: &str, text: &str| json!({"model": "m", "prompt_cache_key": key, "input": [{"role": "user", "content": text}]});
        assert_eq!(
            named(r, responses("k1", "a")),
            named(r, responses("k1", "b"))
        );
        assert_ne!(
            named(r, responses("k1", "a")),
            named(r, responses("k2", "a"))
        );
    }
}
