//! Anthropic Messages: request body and response parsing.

use serde_json::{Value, json};

use super::chat::{ChatRequest, ChatResponse, UpstreamError};

/// The Messages API version sent as `anthropic-version` by every call
/// condense makes itself (summaries, provider counts): the version whose
/// request and answer shapes it writes and reads. The proxy sends the
/// client's own.
pub(super) const VERSION: &str = "2023-06-01";

pub fn body(req: &ChatRequest) -> Value {
    json!({
        "model": req.model,
        "system": req.system,
        "messages": [{"role": "user", "content": req.user}],
        "max_tokens": req.max_tokens,
        "temperature": 0.2,
    })
}

pub fn parse(body: &[u8]) -> Result<ChatResponse, UpstreamError> {
    let v: Value =
        serde_json::from_slice(body).map_err(|e| UpstreamError::Garbage(e.to_string()))?;
    if v.get("type").and_then(Value::as_str) == Some("error") {
        return Err(UpstreamError::Garbage(
            "the answer is an error object".into(),
        ));
    }
    let blocks = v
        .get("content")
        .and_then(Value::as_array)
        .ok_or_else(|| UpstreamError::Garbage("no `content` in the answer".into()))?;
    let text: Vec<&str> = blocks
        .iter()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .collect();
    let stop = v.get("stop_reason").and_then(Value::as_str);
    if stop == Some("refusal") {
        return Err(UpstreamError::Refused);
    }
    let usage = v.get("usage");
    let n = |k: &str| {
        usage
            .and_then(|u| u.get(k))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    Ok(ChatResponse {
        text: text.join(""),
        prompt_tokens: n("input_tokens"),
        completion_tokens: n("output_tokens"),
        truncated: stop == Some("max_tokens"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_text_blocks_and_usage() {
        let r = parse(br#"{"type":"message","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}],"stop_reason":"end_turn","usage":{"input_tokens":9,"output_tokens":2}}"#).unwrap();
        assert_eq!(
            (r.text.as_str(), r.prompt_tokens, r.completion_tokens),
            ("ab", 9, 2)
        );
        assert!(matches!(
            parse(br#"{"type":"error","error":{"type":"overloaded_error"}}"#),
            Err(UpstreamError::Garbage(_))
        ));
        assert!(matches!(
            parse(br#"{"content":[],"stop_reason":"refusal"}"#),
            Err(UpstreamError::Refused)
        ));
    }
}
