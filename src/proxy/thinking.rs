//! Thinking bound to its prefix on the way to the provider (see
//! `compress::binding`, docs/compression.md "Preserved thinking"):
//! Anthropic's `drop_block` opt-out. The Responses API has none: condense
//! removes the reasoning it cannot vouch for instead, and reports it as
//! removed thinking.

use serde_json::Value;

use crate::compress::AppliedEdit;
use crate::thread::WireFormat;

/// Whether the forwarded body opts into `drop_block` (and its beta), so the
/// API drops exactly the stale blocks compression kept.
pub(super) fn opts_in(format: WireFormat, json: &Value, drop_block: bool) -> bool {
    drop_block && format == WireFormat::Anthropic && thinking_on(json)
}

/// The beta that lets a request set `thinking.block_binding`.
pub const DROP_BLOCK_BETA: &str = "thinking-binding-controls-2026-08-01";

/// Thinking is on: an active loop's final thinking block must then stay.
pub(super) fn thinking_on(json: &Value) -> bool {
    matches!(
        json.pointer("/thinking/type").and_then(Value::as_str),
        Some("enabled" | "adaptive")
    )
}

/// The API drops invalid kept thinking blocks instead of refusing the request.
pub(super) fn opt_into_drop_block(json: &mut Value) {
    if let Some(thinking) = json.get_mut("thinking").and_then(Value::as_object_mut) {
        let binding = thinking
            .entry("block_binding")
            .or_insert_with(|| Value::Object(Default::default()));
        if let Some(b) = binding.as_object_mut() {
            b.insert("prefix_mismatch_behavior".into(), "drop_block".into());
        }
    }
}

/// What [`spliced`] puts first in the `thinking` object.
const OPT_OUT: &[u8] = br#""block_binding":{"prefix_mismatch_behavior":"drop_block"}"#;

/// `body` with the `drop_block` opt-out spliced into its top-level
/// `thinking` object, every other byte as the client wrote it (numbers,
/// spacing, key order), so a body that goes as it came changes in that
/// alone. None when the object is not there as written (its key spelt with
/// escapes) or already has a `block_binding`: the caller then writes the
/// parsed JSON. `body` is valid JSON (it was parsed); the scan is one pass
/// over it, without recursion. Hand-written: serde_json's `RawValue` would
/// give the object's bytes, not a place in a body it did not write.
pub(super) fn spliced(body: &[u8]) -> Option<Vec<u8>> {
    let top = members(body, ws(body, 0))?;
    // The last one is what a parser keeps.
    let (_, open, _) = top.into_iter().rev().find(|(k, ..)| *k == b"thinking")?;
    let inner = members(body, open)?;
    if inner.iter().any(|(k, ..)| *k == b"block_binding") {
        return None;
    }
    let at = open + 1;
    let comma: &[u8] = if inner.is_empty() { b"" } else { b"," };
    let mut out = Vec::with_capacity(body.len() + OPT_OUT.len() + 1);
    out.extend_from_slice(&body[..at]);
    out.extend_from_slice(OPT_OUT);
    out.extend_from_slice(comma);
    out.extend_from_slice(&body[at..]);
    Some(out)
}

/// A body forwarded unread (condense overloaded) whose Anthropic thinking
/// is on as written, with the opt-out spliced in: unread, its history cannot
/// be judged, and the opt-out drops only blocks bound to another prefix
/// (say one condense rewrote on an earlier turn). None: thinking is not on,
/// or not there as written.
pub(super) fn unread_opted_out(body: &[u8]) -> Option<Vec<u8>> {
    let top = members(body, ws(body, 0))?;
    let (_, open, _) = top.into_iter().rev().find(|(k, ..)| *k == b"thinking")?;
    let inner = members(body, open)?;
    let (_, start, end) = inner.into_iter().rev().find(|(k, ..)| *k == b"type")?;
    let on = matches!(&body[start..end], br#""enabled""# | br#""adaptive""#);
    on.then(|| spliced(body))?
}

/// The members of the object opening at `open`: each key as written and
/// where its value starts and ends.
fn members(b: &[u8], open: usize) -> Option<Vec<(&[u8], usize, usize)>> {
    (b.get(open) == Some(&b'{')).then_some(())?;
    let mut out = Vec::new();
    let mut i = ws(b, open + 1);
    if b.get(i) == Some(&b'}') {
        return Some(out);
    }
    loop {
        let key_end = string_end(b, i)?;
        let key = &b[i + 1..key_end - 1];
        i = ws(b, key_end);
        (b.get(i) == Some(&b':')).then_some(())?;
        let start = ws(b, i + 1);
        let end = value_end(b, start)?;
        out.push((key, start, end));
        i = ws(b, end);
        match b.get(i)? {
            b',' => i = ws(b, i + 1),
            b'}' => return Some(out),
            _ => return None,
        }
    }
}

/// The first byte at or after `i` that is not JSON whitespace.
fn ws(b: &[u8], mut i: usize) -> usize {
    while matches!(b.get(i), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        i += 1;
    }
    i
}

/// Just past the string opening at `i`.
fn string_end(b: &[u8], i: usize) -> Option<usize> {
    (b.get(i) == Some(&b'"')).then_some(())?;
    let mut j = i + 1;
    loop {
        match b.get(j)? {
            b'\\' => j += 2,
            b'"' => return Some(j + 1),
            _ => j += 1,
        }
    }
}

/// Just past the value starting at `i`.
fn value_end(b: &[u8], i: usize) -> Option<usize> {
    match b.get(i)? {
        b'"' => string_end(b, i),
        b'{' | b'[' => {
            let (mut depth, mut j) = (0usize, i);
            loop {
                match b.get(j)? {
                    b'"' => {
                        j = string_end(b, j)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth = depth.checked_sub(1)?;
                        if depth == 0 {
                            return Some(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
        }
        _ => {
            let mut j = i;
            while !matches!(
                b.get(j),
                None | Some(b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')
            ) {
                j += 1;
            }
            Some(j)
        }
    }
}

pub(super) fn removed_thinking(edits: &[AppliedEdit]) -> usize {
    edits
        .iter()
        .map(|e| match e {
            AppliedEdit::RemoveStaleThinking {
                removed_thinking_turns,
                ..
            } => *removed_thinking_turns,
            _ => 0,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::{spliced, unread_opted_out};

    #[test]
    fn the_opt_out_is_spliced_in_and_every_other_byte_kept() {
        let body = br#"{ "model": "m", "n": 123456789012345678901234567890,
  "messages": [{"role": "assistant", "content": [{"type": "thinking", "thinking": "a \" { [", "signature": "s"}]}],
  "thinking" : { "type": "adaptive" } }"#;
        let out = spliced(body).unwrap();
        let text = String::from_utf8(out.clone()).unwrap();
        let original = String::from_utf8(body.to_vec()).unwrap();
        let opt_out = r#""block_binding":{"prefix_mismatch_behavior":"drop_block"},"#;
        assert_eq!(text.replacen(opt_out, "", 1), original);
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(
            v["thinking"],
            json!({"block_binding": {"prefix_mismatch_behavior": "drop_block"}, "type": "adaptive"})
        );
        assert_eq!(v["messages"][0]["content"][0]["thinking"], "a \" { [");
    }

    #[test]
    fn the_last_thinking_is_the_one_a_parser_keeps() {
        let body = br#"{"thinking":{"type":"disabled"},"thinking":{}}"#;
        let v: Value = serde_json::from_slice(&spliced(body).unwrap()).unwrap();
        assert_eq!(
            v["thinking"],
            json!({"block_binding": {"prefix_mismatch_behavior": "drop_block"}})
        );
    }

    #[test]
    fn what_it_cannot_find_as_written_it_leaves_to_the_json_writer() {
        for body in [
            &br#"{"\u0074hinking":{"type":"adaptive"}}"#[..],
            br#"{"thinking":{"type":"adaptive","block_binding":{}}}"#,
            br#"{"thinking":"adaptive"}"#,
            br#"{"model":"m"}"#,
            br#"[]"#,
        ] {
            assert_eq!(spliced(body), None, "{}", String::from_utf8_lossy(body));
        }
    }

    #[test]
    fn an_unread_body_is_opted_out_only_with_thinking_on() {
        let on = br#"{"model": "m", "thinking": {"type": "enabled", "budget_tokens": 1024}, "messages": []}"#;
        let out = unread_opted_out(on).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(
            v["thinking"]["block_binding"]["prefix_mismatch_behavior"],
            "drop_block"
        );
        for off in [
            &br#"{"thinking": {"type": "disabled"}, "messages": []}"#[..],
            br#"{"messages": [{"role": "user", "content": "thinking"}]}"#,
            b"not json",
        ] {
            assert_eq!(
                unread_opted_out(off),
                None,
                "{}",
                String::from_utf8_lossy(off)
            );
        }
    }
}
