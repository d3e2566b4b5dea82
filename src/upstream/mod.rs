//! The upstream LLM client: OpenAI Chat Completions or Anthropic Messages
//! (and OpenAI's `/responses/compact`), with timeouts, retries inside a
//! time budget and a cap on concurrent calls.

mod answer;
mod base_url;
mod chat;
mod compact;
pub mod count;
mod retry;
mod secret;

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Semaphore;

pub use base_url::{BaseUrl, ProviderUrls};
use chat::transport;
pub use chat::{ChatRequest, ChatResponse, Kind, UpstreamError};
pub use compact::{CompactTarget, Compacted};
pub use count::{
    CountCall, CountError, CountSource, Provenance, ProviderCountConfig, ProviderCounter,
};
pub use retry::RetryPolicy;
pub use secret::{Scrubber, Secret};

use crate::metrics::Metrics;
use crate::redact::redact_url;

#[derive(Debug, Clone)]
pub struct UpstreamConfig {
    pub kind: Kind,
    /// e.g. `https://api.openai.com/v1` or `http://127.0.0.1:8089/v1`.
    pub base_url: reqwest::Url,
    pub api_key: Secret,
    /// Model used when a request does not choose one.
    pub model: String,
    /// Models a request may choose (`summarizer.model`); empty allows only `model`.
    pub allowed_models: Vec<String>,
    /// Timeout of one HTTP call.
    pub timeout: Duration,
    pub retry: RetryPolicy,
    /// Most upstream calls in flight at once, across all requests.
    pub max_concurrency: usize,
    /// The summarizer model's window (prompt + output), for chunking.
    pub context_window: usize,
    /// Longest tool result (and tool-call arguments) in the transcript, in characters.
    pub result_chars: usize,
}

/// The client. Cheap to clone.
#[derive(Clone)]
pub struct Upstream {
    http: reqwest::Client,
    config: Arc<UpstreamConfig>,
    permits: Arc<Semaphore>,
    metrics: Metrics,
    scrubber: Arc<Scrubber>,
}

impl std::fmt::Debug for Upstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Upstream")
            .field("kind", &self.config.kind)
            .field("base_url", &redact_url(self.config.base_url.as_str()))
            .field("model", &self.config.model)
            .finish_non_exhaustive()
    }
}

/// A finished call: the answer (or the last error), with what it cost.
pub struct Called<T = ChatResponse> {
    pub result: Result<T, UpstreamError>,
    pub attempts: u32,
    pub elapsed: Duration,
}

impl Upstream {
    pub fn new(config: UpstreamConfig) -> anyhow::Result<Self> {
        let http = client(config.timeout)?;
        let permits = Arc::new(Semaphore::new(config.max_concurrency.max(1)));
        let scrubber = Scrubber::new(&config.api_key, &config.base_url, &http);
        Ok(Self {
            http,
            config: Arc::new(config),
            permits,
            metrics: Metrics::default(),
            scrubber: Arc::new(scrubber),
        })
    }

    /// A provider that only compacts ([`CompactTarget`], whose credentials
    /// and model every call brings): the proxy's OpenAI provider at
    /// `base_url`, asked through the proxy's own client `http` (its connect
    /// and idle timeouts, no redirects), retried by the default policy, with
    /// no cap of its own: the compressions that ask it hold the proxy's
    /// places among the requests at work. Needs no configured upstream.
    pub fn provider(base_url: reqwest::Url, http: reqwest::Client) -> Self {
        let config = UpstreamConfig {
            kind: Kind::OpenAi,
            base_url,
            api_key: Secret::default(),
            model: String::new(),
            allowed_models: Vec::new(),
            // `http` has its own timeouts; the retry budget bounds the call.
            timeout: RetryPolicy::DEFAULT_BUDGET,
            retry: RetryPolicy::default(),
            max_concurrency: Semaphore::MAX_PERMITS,
            // The span goes whole: no window nor result limit shapes it.
            context_window: 0,
            result_chars: 0,
        };
        let scrubber = Scrubber::new(&config.api_key, &config.base_url, &http);
        Self {
            http,
            permits: Arc::new(Semaphore::new(config.max_concurrency)),
            config: Arc::new(config),
            metrics: Metrics::default(),
            scrubber: Arc::new(scrubber),
        }
    }

    /// Records each HTTP request (time, outcome, tokens) into `metrics`.
    pub fn with_metrics(self, metrics: Metrics) -> Self {
        Self { metrics, ..self }
    }

    pub fn config(&self) -> &UpstreamConfig {
        &self.config
    }

    /// The model a request gets: its own choice when allowed, else the default.
    pub fn choose_model(&self, requested: Option<&str>) -> Result<String, String> {
        let c = &self.config;
        match requested {
            None => Ok(c.model.clone()),
            Some(m) if m == c.model || c.allowed_models.iter().any(|a| a == m) => Ok(m.to_string()),
            // Which models are allowed is the operator's business: a caller
            // learns only that this one is not.
            Some(m) => Err(format!(
                "model `{}` is not allowed for summaries; leave `summarizer.model` out to use the default",
                crate::thread::echo(m)
            )),
        }
    }

    /// One completion, retried; only attempts hold a place under the cap.
    pub async fn complete(&self, req: &ChatRequest) -> Called {
        let started = Instant::now();
        let (result, attempts) = self.config.retry.run(|| self.observed(req)).await;
        Called {
            result,
            attempts,
            elapsed: started.elapsed(),
        }
    }

    /// One attempt under the concurrency cap, recorded in the metrics.
    async fn observed(&self, req: &ChatRequest) -> Result<ChatResponse, UpstreamError> {
        self.attempt(self.once(req), |r| (r.prompt_tokens, r.completion_tokens))
            .await
    }

    /// `call` as one attempt under the concurrency cap, recorded in the
    /// metrics with the tokens `usage` reads of its answer: every call an
    /// upstream makes (a completion, a compaction) goes through here.
    pub(super) async fn attempt<T>(
        &self,
        call: impl std::future::Future<Output = Result<T, UpstreamError>>,
        usage: impl FnOnce(&T) -> (u64, u64),
    ) -> Result<T, UpstreamError> {
        let _permit = self
            .permits
            .acquire()
            .await
            .map_err(|_| UpstreamError::Connect("client closed".into()))?;
        let attempt = self.metrics.upstream_attempt(self.config.kind.as_str());
        let result = call.await;
        match &result {
            Ok(r) => {
                let (prompt, completion) = usage(r);
                attempt.answered(prompt, completion)
            }
            Err(e) => attempt.failed(e.label()),
        }
        result
    }

    async fn once(&self, req: &ChatRequest) -> Result<ChatResponse, UpstreamError> {
        let c = &self.config;
        let base = c.base_url.as_str().trim_end_matches('/');
        let path = match c.kind {
            Kind::OpenAi => "chat/completions",
            Kind::Anthropic => "v1/messages",
        };
        let builder = self.http.post(format!("{base}/{path}"));
        let builder = authorized(builder.json(&chat::body(c.kind, req)), c.kind, &c.api_key);
        let res = builder.send().await.map_err(transport)?;
        let status = res.status();
        if !status.is_success() {
            let retry_after = answer::retry_after(res.headers());
            let body = answer::error_text(res).await;
            return Err(UpstreamError::Status {
                status: status.as_u16(),
                retry_after,
                excerpt: excerpt(&body, &self.scrubber),
            });
        }
        let body = answer::read_capped(res, answer::MAX_ANSWER_BYTES).await?;
        check_answer(chat::parse(c.kind, &body)?)
    }
}

/// An HTTP client for a provider, each call bounded by `timeout`.
fn client(timeout: Duration) -> reqwest::Result<reqwest::Client> {
    reqwest::Client::builder()
        .timeout(timeout)
        .connect_timeout(timeout.min(Duration::from_secs(10)))
        // A redirect would carry `x-api-key` (reqwest keeps it across origins).
        .redirect(reqwest::redirect::Policy::none())
        .build()
}

/// `b` with `key` (unless empty) as `kind`'s API takes it, and its version.
fn authorized(b: reqwest::RequestBuilder, kind: Kind, key: &Secret) -> reqwest::RequestBuilder {
    let b = match kind {
        _ if key.is_empty() => b,
        Kind::OpenAi => b.bearer_auth(key.expose()),
        Kind::Anthropic => b.header("x-api-key", key.expose()),
    };
    match kind {
        Kind::OpenAi => b,
        Kind::Anthropic => b.header("anthropic-version", chat::ANTHROPIC_VERSION),
    }
}

/// A one-line excerpt of an error body for logs, credentials blanked out.
fn excerpt(body: &str, scrubber: &Scrubber) -> String {
    scrubber
        .scrub(body)
        .chars()
        .filter(|c| !c.is_control())
        .take(200)
        .collect()
}

/// An answer that is empty, whitespace, or a refusal is a failure, not a summary.
fn check_answer(r: ChatResponse) -> Result<ChatResponse, UpstreamError> {
    let text = r.text.trim();
    if text.is_empty() {
        return Err(UpstreamError::Empty);
    }
    let head: String = text.chars().take(120).collect::<String>().to_lowercase();
    const REFUSALS: [&str; 5] = [
        "i can't help",
        "i cannot help",
        "i'm sorry, but i can",
        "i am unable to",
        "i can't assist",
    ];
    if REFUSALS.iter().any(|r| head.starts_with(r)) {
        return Err(UpstreamError::Refused);
    }
    Ok(ChatResponse {
        text: text.to_string(),
        ..r
    })
}

#[cfg(test)]
mod client_tests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_and_refused_answers_are_failures() {
        let r = |t: &str| {
            check_answer(ChatResponse {
                text: t.into(),
                ..Default::default()
            })
        };
        assert!(matches!(r("  \n "), Err(UpstreamError::Empty)));
        assert!(matches!(
            r("I'm sorry, but I can't help with that."),
            Err(UpstreamError::Refused)
        ));
        assert_eq!(r(" The user wants X. ").unwrap().text, "The user wants X.");
    }

    #[test]
    fn error_excerpts_never_carry_the_key() {
        let url = reqwest::Url::parse("http://h/v1").unwrap();
        let key = Scrubber::new(&Secret::new("sk-abc"), &url, &reqwest::Client::new());
        assert_eq!(
            excerpt("bad key: Bearer sk-abc\n", &key),
            "bad key: Bearer [redacted]"
        );
    }

    #[test]
    fn what_is_retried() {
        let s = |status| UpstreamError::Status {
            status,
            retry_after: None,
            excerpt: String::new(),
        };
        assert!(s(429).is_retryable());
        assert!(s(503).is_retryable());
        assert!(!s(400).is_retryable());
        assert!(!s(401).is_retryable());
        assert!(UpstreamError::Timeout.is_retryable());
        assert!(!UpstreamError::Garbage("x".into()).is_retryable());
    }

    #[test]
    fn metric_labels_name_the_status_class() {
        let s = |status| UpstreamError::Status {
            status,
            retry_after: None,
            excerpt: "a body the label never carries".into(),
        };
        assert_eq!(s(429).label(), "status_429");
        assert_eq!(s(404).label(), "status_4xx");
        assert_eq!(s(503).label(), "status_5xx");
        assert_eq!(UpstreamError::Connect("10.0.0.1".into()).label(), "connect");
    }
}
