//! Provider-exact token counts from the provider's counting endpoint
//! (`CONDENSE_COUNT_*`). A failure keeps the local estimate, with a warning;
//! answers are memoized by URL, model and body.

mod body;

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Kind, ProviderUrls, Secret, UpstreamError};
use crate::metrics::Metrics;
use crate::thread::Thread;
use crate::tokens::Memo;

/// Most provider counts kept (twice this at most: see [`Memo`]).
const MAX_ENTRIES: usize = 10_000;

/// Where a total comes from: `local`, condense's tokenizer (the default), or
/// `provider`, the provider's counting endpoint (see "Provider-exact counts"
/// in the API's description). A profile's `count` applies to `/v1/verdict`
/// when the request has none.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum CountSource {
    #[default]
    Local,
    Provider,
}

/// Where an answer's total came from, and the local one it replaced.
#[derive(Debug, Clone, Copy, Default, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Provenance {
    /// `provider` when `total_tokens` is the provider's count; else `local`.
    pub source: CountSource,
    /// The local count `total_tokens` replaced; present only with
    /// `source: provider`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub local_total_tokens: Option<u64>,
}

impl Provenance {
    /// The provider's total, in place of the local `local`.
    pub fn provider(local: u64) -> Self {
        Self {
            source: CountSource::Provider,
            local_total_tokens: Some(local),
        }
    }
}

#[derive(Debug, Clone)]
pub struct ProviderCountConfig {
    /// Where each provider's counting endpoint is (`CONDENSE_COUNT_*_URL`).
    pub urls: ProviderUrls,
    pub api_key: Secret,
    /// Timeout of one counting call (connect included).
    pub timeout: Duration,
}

/// Why a total stays the local estimate (nothing the provider wrote, no address).
#[derive(Debug, Clone)]
pub enum CountError {
    /// The route's base URL is not set: the setting that would switch it on.
    NotConfigured(&'static str),
    /// The caller's key lacks the `provider` permission (a profile asked).
    NotPermitted,
    /// The thread has no exact form for the endpoint: what, and where.
    Unconvertible(String),
    /// The call failed.
    Failed(UpstreamError),
}

impl CountError {
    /// The warning that goes with the local estimate.
    pub fn warning(&self) -> String {
        let why = match self {
            CountError::NotConfigured(setting) => format!("{setting} is not set"),
            CountError::NotPermitted => {
                "the API key lacks the `provider` permission its profile's `count` needs".into()
            }
            CountError::Unconvertible(what) => {
                format!("the thread has no exact form for its counting endpoint ({what})")
            }
            CountError::Failed(e) => format!("its counting endpoint failed ({})", e.what()),
        };
        format!("the provider did not count this thread: {why}; total_tokens is the local estimate")
    }
}

/// One count to ask for: built on the CPU pool (megabytes to write and hash).
#[derive(Debug)]
pub struct CountCall {
    kind: Kind,
    url: String,
    body: Vec<u8>,
    key: u128,
}

/// The client. Cheap to clone.
#[derive(Clone)]
pub struct ProviderCounter {
    http: reqwest::Client,
    config: Arc<ProviderCountConfig>,
    memo: Arc<Memo>,
    metrics: Metrics,
}

impl ProviderCounter {
    pub fn new(config: ProviderCountConfig) -> anyhow::Result<Self> {
        let http = super::client(config.timeout)?;
        Ok(Self {
            http,
            config: Arc::new(config),
            memo: Arc::new(Memo::with_capacity(MAX_ENTRIES)),
            metrics: Metrics::default(),
        })
    }

    /// Records each call into `metrics` (`kind="count_openai"`, `"count_anthropic"`).
    pub fn with_metrics(self, metrics: Metrics) -> Self {
        Self { metrics, ..self }
    }

    /// The request that counts `thread` for `model` at its format's provider.
    pub fn prepare(&self, thread: &Thread, model: &str) -> Result<CountCall, CountError> {
        let (kind, body) = body::body(thread, model).map_err(CountError::Unconvertible)?;
        let (base, path) = match kind {
            Kind::Anthropic => (&self.config.urls.anthropic, "/v1/messages/count_tokens"),
            Kind::OpenAi => (&self.config.urls.openai, "/responses/input_tokens"),
        };
        let base = base.get().map_err(CountError::NotConfigured)?;
        let url = format!("{base}{path}");
        let body = serde_json::to_vec(&body).expect("a JSON value serializes");
        let key = self.memo.key(&(&url, model, &body));
        Ok(CountCall {
            kind,
            url,
            body,
            key,
        })
    }

    /// The provider's `input_tokens` for `call`: remembered, or asked.
    pub async fn count(&self, call: &CountCall) -> Result<u64, CountError> {
        if let Some(tokens) = self.memo.get(call.key) {
            return Ok(tokens);
        }
        let kind = match call.kind {
            Kind::Anthropic => "count_anthropic",
            Kind::OpenAi => "count_openai",
        };
        let attempt = self.metrics.upstream_attempt(kind);
        let result = self.once(call).await;
        match &result {
            // Counting is free: no tokens were spent.
            Ok(_) => attempt.answered(0, 0),
            Err(e) => {
                attempt.failed(e.label());
                tracing::warn!(kind, error = e.label(), "a provider count failed");
            }
        }
        let tokens = result.map_err(CountError::Failed)?;
        self.memo.insert(call.key, tokens);
        Ok(tokens)
    }

    async fn once(&self, call: &CountCall) -> Result<u64, UpstreamError> {
        let req = self
            .http
            .post(&call.url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(call.body.clone());
        let res = super::authorized(req, call.kind, &self.config.api_key)
            .send()
            .await
            .map_err(super::transport)?;
        let status = res.status();
        if !status.is_success() {
            // The body is the provider's: it goes nowhere.
            return Err(UpstreamError::Status {
                status: status.as_u16(),
                retry_after: None,
                excerpt: String::new(),
            });
        }
        // `{"input_tokens": N}`: anything longer than an error body is not a count.
        let bytes = super::answer::read_capped(res, super::answer::MAX_ERROR_BYTES).await?;
        input_tokens(&bytes)
    }
}

/// `input_tokens` of an answer (both endpoints name it so).
fn input_tokens(body: &[u8]) -> Result<u64, UpstreamError> {
    serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| v.get("input_tokens").and_then(Value::as_u64))
        .ok_or_else(|| UpstreamError::Garbage("no `input_tokens` in the answer".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_input_tokens_and_nothing_else() {
        assert_eq!(input_tokens(br#"{"input_tokens":32}"#).unwrap(), 32);
        assert_eq!(
            input_tokens(br#"{"input_tokens":7,"object":"response.input_tokens"}"#).unwrap(),
            7
        );
        for bad in [
            &b"<html>"[..],
            br#"{"tokens":3}"#,
            br#"{"input_tokens":-1}"#,
        ] {
            assert!(matches!(input_tokens(bad), Err(UpstreamError::Garbage(_))));
        }
    }

    #[test]
    fn warnings_name_the_failure_not_the_answer() {
        let status = CountError::Failed(UpstreamError::Status {
            status: 429,
            retry_after: None,
            excerpt: "secret body".into(),
        });
        let w = status.warning();
        assert!(w.contains("HTTP 429") && !w.contains("secret body"), "{w}");
        let off = CountError::NotConfigured("CONDENSE_COUNT_OPENAI_URL").warning();
        assert!(
            off.contains("CONDENSE_COUNT_OPENAI_URL is not set"),
            "{off}"
        );
        let down = CountError::Failed(UpstreamError::Connect("10.1.2.3:443".into())).warning();
        assert!(
            down.contains("unreachable") && !down.contains("10.1.2.3"),
            "{down}"
        );
    }
}
