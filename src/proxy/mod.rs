//! The drop-in proxy: an agent points its OpenAI (Chat Completions or
//! Responses) or Anthropic SDK at condense, and each request passes through on its way to the provider,
//! its thread compressed when due, the provider's answer relayed unchanged.
//!
//! It calls the same [`Compressor`] as `/v1/compress`, in continuity mode:
//! the agent resends its whole history every turn, and the forwarded prefix
//! stays byte-identical until the next summary is due, so the provider's
//! prompt cache keeps hitting. Condense never turns a request the provider
//! would have accepted into an error of its own: whatever goes wrong on its
//! side (a thread it cannot read, a summary that fails, a thread that cannot
//! fit) forwards the request unchanged, says why in a header, and logs and
//! counts it (see [`Unchanged`]).
//!
//! The counting endpoints (Anthropic's `count_tokens`, the Responses API's
//! `input_tokens`) get the same preparation as the ones that generate: a
//! client that counts before it sends must count what condense forwards.

mod headers;
mod prepare;
mod relay;
mod thinking;
mod unchanged;

use std::sync::Arc;
use std::time::Duration;

use crate::compress::Compressor;
use crate::policy::Profiles;
use crate::thread::{Limits, WireFormat};
use crate::upstream::{ProviderUrls, Secret};

pub use headers::{PROVIDER_REQUEST_ID, to_client};
pub use prepare::{Options, PROFILE, Prepared, Report, SHADOW, report_names};
pub use relay::{Call, Forwarded};
pub use unchanged::Unchanged;

/// The provider endpoint a proxy route forwards to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    ChatCompletions,
    Responses,
    /// Counts a Responses request's input tokens.
    ResponsesInputTokens,
    Messages,
    /// Counts a Messages request's input tokens.
    MessagesCountTokens,
}

impl Endpoint {
    /// The provider API the endpoint's requests speak (its metrics label too).
    pub fn format(self) -> WireFormat {
        match self {
            Endpoint::ChatCompletions => WireFormat::OpenAi,
            Endpoint::Responses | Endpoint::ResponsesInputTokens => WireFormat::Responses,
            Endpoint::Messages | Endpoint::MessagesCountTokens => WireFormat::Anthropic,
        }
    }

    /// The path after the provider's base URL. OpenAI's base URL ends in
    /// `/v1` (`https://api.openai.com/v1`, as its SDKs take it), Anthropic's
    /// does not (`https://api.anthropic.com`, as its SDKs take it).
    pub fn path(self) -> &'static str {
        match self {
            Endpoint::ChatCompletions => "/chat/completions",
            Endpoint::Responses => "/responses",
            Endpoint::ResponsesInputTokens => "/responses/input_tokens",
            Endpoint::Messages => "/v1/messages",
            Endpoint::MessagesCountTokens => "/v1/messages/count_tokens",
        }
    }
}

#[derive(Debug, Clone)]
pub struct ProxyConfig {
    /// Where each route forwards to (`CONDENSE_PROXY_*_URL`).
    pub urls: ProviderUrls,
    /// Sent when a request carries no credentials of its own, for callers
    /// with the `provider` permission.
    pub api_key: Secret,
    /// Forward every thread unchanged; only report.
    pub shadow: bool,
    /// A response that sends nothing for this long is cut.
    pub idle_timeout: Duration,
    /// Longest time compression may take before the request is forwarded
    /// unchanged instead.
    pub prepare_timeout: Duration,
    /// How much a thread may hold: a larger one is refused (413), as on
    /// the API, rather than forwarded.
    pub limits: Limits,
}

#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    #[error("the proxy route is off: set {0} to the provider's base URL to switch it on")]
    Disabled(&'static str),
    /// Carries no address or provider text: only what kind of failure.
    #[error("the provider could not be reached ({0})")]
    Unreachable(&'static str),
    /// The thread is over the configured limits; says which and the limit.
    #[error("{0}")]
    TooLarge(String),
    /// The caller may not spend the operator's provider key.
    #[error("{0}")]
    Forbidden(String),
}

/// The proxy service. Cheap to share (`Arc`s inside).
pub struct Proxy {
    http: reqwest::Client,
    config: ProxyConfig,
    compressor: Arc<Compressor>,
    profiles: Arc<Profiles>,
}

impl Proxy {
    pub fn new(
        config: ProxyConfig,
        compressor: Arc<Compressor>,
        profiles: Arc<Profiles>,
    ) -> anyhow::Result<Self> {
        // No overall timeout: a healthy stream may run as long as it runs.
        // The read timeout is per read, so it only cuts a stream gone idle.
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(30))
            .read_timeout(config.idle_timeout)
            // A provider's 3xx goes back to the caller as it is: followed,
            // it would take the credentials (`x-api-key`, which reqwest does
            // not strip across origins) to wherever it points.
            .redirect(reqwest::redirect::Policy::none())
            .build()?;
        Ok(Self {
            http,
            config,
            compressor,
            profiles,
        })
    }

    /// The provider base URL of a route (OpenAI's serves Chat Completions
    /// and Responses), or why the route is off.
    pub fn target(&self, format: WireFormat) -> Result<&str, ProxyError> {
        let url = match format {
            WireFormat::OpenAi | WireFormat::Responses => &self.config.urls.openai,
            WireFormat::Anthropic => &self.config.urls.anthropic,
        };
        url.get().map_err(ProxyError::Disabled)
    }
}
