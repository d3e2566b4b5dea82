//! `[proxy]`: the drop-in proxy's providers, and `[count]`: where
//! provider-exact counts are asked (apart, so counts do not switch the proxy on).

use std::time::Duration;

use clap::Args;

use super::validate::{Invalid, base_url};
use super::{MIN_PERIOD, duration};
use crate::upstream::{ProviderCountConfig, ProviderUrls, Secret};

// The settings a route left off names (their flags' `CONDENSE_` variables).
const PROXY_OPENAI_URL: &str = "CONDENSE_PROXY_OPENAI_URL";
const PROXY_ANTHROPIC_URL: &str = "CONDENSE_PROXY_ANTHROPIC_URL";
const COUNT_OPENAI_URL: &str = "CONDENSE_COUNT_OPENAI_URL";
const COUNT_ANTHROPIC_URL: &str = "CONDENSE_COUNT_ANTHROPIC_URL";

#[derive(Debug, Clone, PartialEq, Args)]
pub struct ProxySettings {
    /// Proxy `POST /v1/chat/completions`, `POST /v1/responses`, `POST /v1/responses/input_tokens`
    /// and `POST /v1/responses/compact`
    /// to this OpenAI-compatible base URL (e.g. `https://api.openai.com/v1`); unset: the routes are off.
    #[arg(
        id = "proxy.openai_url",
        long = "proxy-openai-url",
        hide_env_values = true
    )]
    pub openai_url: Option<String>,

    /// Proxy `POST /v1/messages` and `POST /v1/messages/count_tokens` to this Anthropic base URL
    /// (e.g. `https://api.anthropic.com`); unset: the routes are off.
    #[arg(
        id = "proxy.anthropic_url",
        long = "proxy-anthropic-url",
        hide_env_values = true
    )]
    pub anthropic_url: Option<String>,

    /// Provider API key sent when a proxied request carries none; never logged.
    #[arg(
        id = "proxy.api_key",
        long = "proxy-api-key",
        hide_env_values = true,
        default_value = ""
    )]
    pub api_key: Secret,

    /// Shadow mode: forward every thread unchanged and only report (in
    /// headers) what compression would have done.
    #[arg(id = "proxy.shadow", long = "proxy-shadow")]
    pub shadow: bool,

    /// Time a proxied response may send nothing before it is cut. A bare
    /// number is seconds.
    // A stream that sends nothing for this long is cut; a healthy one never is.
    #[arg(
        id = "proxy.idle_timeout",
        long = "proxy-idle-timeout",
        value_parser = duration::parse_secs,
        default_value = "5m"
    )]
    pub idle_timeout: Duration,
}

impl ProxySettings {
    /// Where the proxy routes forward to.
    pub fn urls(&self) -> Result<ProviderUrls, Invalid> {
        let (openai, anthropic) = (self.openai_url.as_deref(), self.anthropic_url.as_deref());
        Ok(ProviderUrls {
            openai: base_url("proxy.openai_url", PROXY_OPENAI_URL, openai)?,
            anthropic: base_url("proxy.anthropic_url", PROXY_ANTHROPIC_URL, anthropic)?,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Args)]
pub struct CountSettings {
    /// Provider-exact counts (`count: "provider"`) of OpenAI threads ask
    /// this base URL's `/responses/input_tokens` (e.g. `https://api.openai.com/v1`);
    /// unset: they are local estimates.
    #[arg(
        id = "count.openai_url",
        long = "count-openai-url",
        hide_env_values = true
    )]
    pub openai_url: Option<String>,

    /// Provider-exact counts of Anthropic threads ask this base URL's
    /// `/v1/messages/count_tokens` (e.g. `https://api.anthropic.com`).
    #[arg(
        id = "count.anthropic_url",
        long = "count-anthropic-url",
        hide_env_values = true
    )]
    pub anthropic_url: Option<String>,

    /// Provider API key of the counting calls; never logged.
    #[arg(
        id = "count.api_key",
        long = "count-api-key",
        hide_env_values = true,
        default_value = ""
    )]
    pub api_key: Secret,

    /// Time a provider-exact count may take before the local estimate is
    /// answered instead.
    // A counting call is a short request: a provider slower than this is answered with the
    // local estimate.
    #[arg(
        id = "count.timeout",
        long = "count-timeout",
        value_parser = duration::parse,
        default_value = "10s"
    )]
    pub timeout: Duration,
}

impl CountSettings {
    /// Where provider-exact counts are asked, and with what key.
    pub fn client(&self) -> Result<ProviderCountConfig, Invalid> {
        let (openai, anthropic) = (self.openai_url.as_deref(), self.anthropic_url.as_deref());
        Ok(ProviderCountConfig {
            urls: ProviderUrls {
                openai: base_url("count.openai_url", COUNT_OPENAI_URL, openai)?,
                anthropic: base_url("count.anthropic_url", COUNT_ANTHROPIC_URL, anthropic)?,
            },
            api_key: self.api_key.clone(),
            timeout: self.timeout.max(MIN_PERIOD),
        })
    }
}
