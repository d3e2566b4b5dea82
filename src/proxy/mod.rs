//! The drop-in proxy: an agent points its OpenAI or Anthropic SDK at condense;
//! each thread is compressed when due (in continuity mode, so the forwarded
//! prefix stays byte-identical and the provider's prompt cache keeps hitting)
//! and the answer relayed unchanged. Whatever goes wrong on condense's side
//! forwards the request unchanged ([`Unchanged`]). The counting endpoints get
//! the same preparation: a client must count what condense forwards.

mod bill;
mod conversation;
mod headers;
mod idle;
mod prepare;
mod relay;
mod thinking;
mod unchanged;

use std::sync::Arc;
use std::time::Duration;

use crate::compress::Compressor;
use crate::policy::Profiles;
use crate::thread::{Limits, WireFormat};
use crate::upstream::{ProviderUrls, Secret, Upstream};

pub use bill::{Difference, Ledger, LedgerTotals, LedgerTurn};
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
    /// The provider's own compaction of a Responses thread.
    ResponsesCompact,
    Messages,
    /// Counts a Messages request's input tokens.
    MessagesCountTokens,
}

impl Endpoint {
    /// The provider API the endpoint speaks.
    pub fn format(self) -> WireFormat {
        match self {
            Endpoint::ChatCompletions => WireFormat::OpenAi,
            Endpoint::Responses | Endpoint::ResponsesInputTokens | Endpoint::ResponsesCompact => {
                WireFormat::Responses
            }
            Endpoint::Messages | Endpoint::MessagesCountTokens => WireFormat::Anthropic,
        }
    }

    /// Why this endpoint's requests always go as they came (None: they are
    /// prepared). A client that asks its provider to compact its thread
    /// wants the provider's compaction of that thread: a summary of
    /// condense's first would stack two compactions.
    pub fn passed_through(self) -> Option<&'static str> {
        match self {
            Endpoint::ResponsesCompact => Some(PROVIDER_COMPACTS),
            _ => None,
        }
    }

    /// The path after the provider's base URL (as each SDK takes it,
    /// OpenAI's ends in `/v1`, Anthropic's does not).
    pub fn path(self) -> &'static str {
        match self {
            Endpoint::ChatCompletions => "/chat/completions",
            Endpoint::Responses => "/responses",
            Endpoint::ResponsesInputTokens => "/responses/input_tokens",
            Endpoint::ResponsesCompact => "/responses/compact",
            Endpoint::Messages => "/v1/messages",
            Endpoint::MessagesCountTokens => "/v1/messages/count_tokens",
        }
    }
}

/// The note of a compaction request, forwarded as it came.
const PROVIDER_COMPACTS: &str = "the provider compacts this thread itself: forwarded as it came";

#[derive(Debug, Clone)]
pub struct ProxyConfig {
    /// Where each route forwards to (`CONDENSE_PROXY_*_URL`).
    pub urls: ProviderUrls,
    /// For requests without credentials, from callers with `provider`.
    pub api_key: Secret,
    /// Forward every thread unchanged; only report.
    pub shadow: bool,
    /// A response that sends nothing for this long is cut.
    pub idle_timeout: Duration,
    /// Past this, the request is forwarded unchanged.
    pub prepare_timeout: Duration,
    /// A larger thread is refused (413), as on the API.
    pub limits: Limits,
}

#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    #[error("the proxy route is off: set {0} to the provider's base URL to switch it on")]
    Disabled(&'static str),
    /// Only the kind of failure: no address, no provider text.
    #[error("the provider could not be reached ({0})")]
    Unreachable(&'static str),
    #[error("{0}")]
    TooLarge(String),
    #[error("{0}")]
    Forbidden(String),
}

/// The proxy service. Cheap to share (`Arc`s inside).
pub struct Proxy {
    http: reqwest::Client,
    config: ProxyConfig,
    compressor: Arc<Compressor>,
    profiles: Arc<Profiles>,
    /// The OpenAI provider as a `provider` summary's writer, through `http`
    /// (None: the OpenAI routes are off).
    compactor: Option<Upstream>,
}

impl Proxy {
    pub fn new(
        config: ProxyConfig,
        compressor: Arc<Compressor>,
        profiles: Arc<Profiles>,
    ) -> anyhow::Result<Self> {
        // No overall timeout: the read timeout only cuts a stream gone idle.
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(30))
            .read_timeout(config.idle_timeout)
            // Followed, a 3xx would take `x-api-key` (reqwest keeps it across
            // origins) wherever it points: the caller gets it as it is.
            .redirect(reqwest::redirect::Policy::none())
            .build()?;
        let compactor = config.urls.openai.url().map(|base| {
            Upstream::provider(base.clone(), http.clone())
                .with_metrics(compressor.metrics().clone())
        });
        Ok(Self {
            http,
            config,
            compressor,
            profiles,
            compactor,
        })
    }

    /// The provider base URL of a route, or why the route is off.
    pub fn target(&self, format: WireFormat) -> Result<&str, ProxyError> {
        let url = match format {
            WireFormat::OpenAi | WireFormat::Responses => &self.config.urls.openai,
            WireFormat::Anthropic => &self.config.urls.anthropic,
        };
        url.get().map_err(ProxyError::Disabled)
    }
}
