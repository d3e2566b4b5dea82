//! OpenAI Chat Completions: request body and response parsing.

use serde_json::{Value, json};

use super::chat::{ChatRequest, ChatResponse, UpstreamError};

pub fn body(req: &ChatRequest) -> Value {
    json!({
        "model": req.model,
        "messages": [
            {"role": "system", "content": req.system},
            {"role": "user", "content": req.user},
        ],
        "max_tokens": req.max_tokens,
        "temperature": 0.2,
        "stream": false,
    })
}

pub fn parse(body: &[u8]) -> Result<ChatResponse, UpstreamError> {
    let v: Value =
        serde_json::from_slice(body).map_err(|e| UpstreamError::Garbage(e.to_string()))?;
    let choice = v
        .get("choices")
        .and_then(Value::as_array)
        .and_then(|c| c.first())
        .ok_or_else(|| UpstreamError::Garbage("no `choices` in the answer".into()))?;
    let message = choice
        .get("message")
        .ok_or_else(|| UpstreamError::Garbage("no `message` in the choice".into()))?;
    if message
        .get("refusal")
        .and_then(Value::as_str)
        .is_some_and(|r| !r.is_empty())
    {
        return Err(UpstreamError::Refused);
    }
    let text = message
        .get("content")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let usage = v.get("usage");
    let n = |k: &str| {
        usage
            .and_then(|u| u.get(k))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    Ok(ChatResponse {
        text,
        prompt_tokens: n("prompt_tokens"),
        completion_tokens: n("completion_tokens"),
        truncated: choice.get("finish_reason").and_then(Value::as_str) == Some("length"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_choices_and_usage() {
        let r = parse(br#"{"choices":[{"message":{"role":"assistant","content":"hi"},"finish_reason":"length"}],"usage":{"prompt_tokens":12,"completion_tokens":3}}"#).unwrap();
        assert_eq!(
            (
                r.text.as_str(),
                r.prompt_tokens,
                r.completion_tokens,
                r.truncated
            ),
            ("hi", 12, 3, true)
        );
        assert!(matches!(
            parse(br#"{"choices":[]}"#),
            Err(UpstreamError::Garbage(_))
        ));
        assert!(matches!(parse(b"<html>"), Err(UpstreamError::Garbage(_))));
        assert!(matches!(
            parse(br#"{"choices":[{"message":{"content":null,"refusal":"no"}}]}"#),
            Err(UpstreamError::Refused)
        ));
    }
}
