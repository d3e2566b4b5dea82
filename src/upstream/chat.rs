//! One completion call as every wire format sees it: the request, the
//! answer, and why it failed.

use std::time::Duration;

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

/// Why an upstream call failed. Displays without secrets or response bodies
/// beyond a short excerpt.
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

    /// What failed, in a word or a status code, for clients: no response
    /// body, no address, nothing the upstream wrote.
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

    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            UpstreamError::Status { retry_after, .. } => *retry_after,
            _ => None,
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
