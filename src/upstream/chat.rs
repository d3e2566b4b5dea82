//! One completion call: the request, the answer, why it failed, and each
//! API's body and answer for it.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
/// Which API the upstream speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// `POST {base}/chat/completions` (OpenAI, vLLM, llama.cpp, Ollama, LiteLLM, OpenRouter).
    #[value(name = "openai")]
    #[serde(rename = "openai")]
    OpenAi,
    /// `POST {base}/v1/messages` with `x-api-key` and `anthropic-version`.
    Anthropic,
}

impl Kind {
    /// The name the configuration takes, and the metrics' `kind` label.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::OpenAi => "openai",
            Kind::Anthropic => "anthropic",
        }
    }
}

/// The Messages API version of condense's own calls (summaries, provider
/// counts): the shapes it writes and reads. The proxy sends the client's own.
pub(super) const ANTHROPIC_VERSION: &str = "2023-06-01";

/// One completion request: a system prompt and one user message.
#[derive(Debug, Clone)]
pub struct ChatRequest {
    pub model: String,
    pub system: String,
    pub user: String,
    pub max_tokens: u32,
}

#[derive(Debug, Clone, Default)]
pub struct ChatResponse {
    pub text: String,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// `length` / `max_tokens` when the model ran out of output tokens.
    pub truncated: bool,
}

/// Why an upstream call failed; displays no secret and only an excerpt of a body.
#[derive(Debug, Clone, thiserror::Error)]
pub enum UpstreamError {
    #[error("the upstream did not answer in time")]
    Timeout,
    #[error("could not reach the upstream: {0}")]
    Connect(String),
    #[error("the upstream answered HTTP {status}: {excerpt}")]
    Status {
        status: u16,
        retry_after: Option<Duration>,
        excerpt: String,
    },
    #[error("the upstream's answer could not be parsed: {0}")]
    Garbage(String),
    #[error("the upstream returned no summary text")]
    Empty,
    #[error("the upstream refused to summarize")]
    Refused,
}

impl UpstreamError {
    pub fn is_retryable(&self) -> bool {
        match self {
            UpstreamError::Timeout | UpstreamError::Connect(_) => true,
            UpstreamError::Status { status, .. } => *status == 429 || *status >= 500,
            UpstreamError::Garbage(_) | UpstreamError::Empty | UpstreamError::Refused => false,
        }
    }

    /// What failed, for clients: nothing the upstream wrote, no address.
    pub fn what(&self) -> String {
        match self {
            UpstreamError::Timeout => "timed out".to_string(),
            UpstreamError::Connect(_) => "unreachable".to_string(),
            UpstreamError::Status { status, .. } => format!("HTTP {status}"),
            UpstreamError::Garbage(_) => "an unreadable answer".to_string(),
            UpstreamError::Empty => "an empty answer".to_string(),
            UpstreamError::Refused => "a refusal".to_string(),
        }
    }

    /// [`UpstreamError::what`], and whether it is retried.
    pub fn short(&self) -> String {
        let retry = match self.is_retryable() {
            true => "retryable",
            false => "not retryable",
        };
        format!("{}, {retry}", self.what())
    }

    /// What failed, as one fixed word (the metrics' `error` label).
    pub fn label(&self) -> &'static str {
        match self {
            UpstreamError::Timeout => "timeout",
            UpstreamError::Connect(_) => "connect",
            UpstreamError::Status { status: 429, .. } => "status_429",
            UpstreamError::Status { status, .. } if *status < 500 => "status_4xx",
            UpstreamError::Status { .. } => "status_5xx",
            UpstreamError::Garbage(_) => "garbage",
            UpstreamError::Empty => "empty",
            UpstreamError::Refused => "refused",
        }
    }
}

pub(super) fn transport(e: reqwest::Error) -> UpstreamError {
    if e.is_timeout() {
        UpstreamError::Timeout
    } else {
        // Without the URL: it may carry credentials in some deployments.
        UpstreamError::Connect(e.without_url().to_string())
    }
}

/// The body of `req` in `kind`'s API.
pub(super) fn body(kind: Kind, req: &ChatRequest) -> Value {
    match kind {
        Kind::OpenAi => json!({
            "model": req.model,
            "messages": [
                {"role": "system", "content": req.system},
                {"role": "user", "content": req.user},
            ],
            "max_tokens": req.max_tokens,
            "temperature": 0.2,
            "stream": false,
        }),
        Kind::Anthropic => json!({
            "model": req.model,
            "system": req.system,
            "messages": [{"role": "user", "content": req.user}],
            "max_tokens": req.max_tokens,
            "temperature": 0.2,
        }),
    }
}

/// An answer in `kind`'s API: its text, usage and whether it was cut short.
pub(super) fn parse(kind: Kind, body: &[u8]) -> Result<ChatResponse, UpstreamError> {
    let garbage = |what: &str| UpstreamError::Garbage(what.into());
    let v: Value = serde_json::from_slice(body).map_err(|e| garbage(&e.to_string()))?;
    let usage = |k: &str| {
        let n = v.get("usage").and_then(|u| u.get(k));
        n.and_then(Value::as_u64).unwrap_or(0)
    };
    match kind {
        Kind::OpenAi => {
            let choice = v.get("choices").and_then(Value::as_array);
            let choice = choice
                .and_then(|c| c.first())
                .ok_or_else(|| garbage("no `choices` in the answer"))?;
            let message = choice
                .get("message")
                .ok_or_else(|| garbage("no `message` in the choice"))?;
            let refusal = message.get("refusal").and_then(Value::as_str);
            if refusal.is_some_and(|r| !r.is_empty()) {
                return Err(UpstreamError::Refused);
            }
            let text = message.get("content").and_then(Value::as_str);
            Ok(ChatResponse {
                text: text.unwrap_or_default().to_string(),
                prompt_tokens: usage("prompt_tokens"),
                completion_tokens: usage("completion_tokens"),
                truncated: choice.get("finish_reason").and_then(Value::as_str) == Some("length"),
            })
        }
        Kind::Anthropic => {
            if v.get("type").and_then(Value::as_str) == Some("error") {
                return Err(garbage("the answer is an error object"));
            }
            let blocks = v
                .get("content")
                .and_then(Value::as_array)
                .ok_or_else(|| garbage("no `content` in the answer"))?;
            let stop = v.get("stop_reason").and_then(Value::as_str);
            if stop == Some("refusal") {
                return Err(UpstreamError::Refused);
            }
            let text = blocks
                .iter()
                .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect();
            Ok(ChatResponse {
                text,
                prompt_tokens: usage("input_tokens"),
                completion_tokens: usage("output_tokens"),
                truncated: stop == Some("max_tokens"),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_choices_and_usage() {
        let parse = |b| parse(Kind::OpenAi, b);
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

    #[test]
    fn parses_text_blocks_and_usage() {
        let parse = |b| parse(Kind::Anthropic, b);
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
