//! `[upstream]`: the LLM that writes `llm` summaries.

use std::time::Duration;

use clap::Args;

use super::validate::{Invalid, base_url};
use super::{MIN_PERIOD, duration};
use crate::upstream::{Kind, RetryPolicy, Secret, UpstreamConfig};

#[derive(Debug, Clone, PartialEq, Args)]
pub struct UpstreamSettings {
    /// Base URL of the upstream LLM that writes `llm` summaries (unset:
    /// heuristic only). Credentials in it (`https://user:pass@host`) are sent
    /// as Basic auth and never shown.
    #[arg(id = "upstream.url", long = "upstream-url", hide_env_values = true)]
    pub url: Option<String>,

    /// API the upstream speaks.
    #[arg(
        id = "upstream.kind",
        long = "upstream-kind",
        value_enum,
        default_value_t = Kind::OpenAi
    )]
    pub kind: Kind,

    /// API key for the upstream; never logged or echoed.
    #[arg(
        id = "upstream.api_key",
        long = "upstream-api-key",
        hide_env_values = true,
        default_value = ""
    )]
    pub api_key: Secret,

    /// Model that writes summaries.
    #[arg(
        id = "upstream.model",
        long = "upstream-model",
        default_value = "gpt-4o-mini"
    )]
    pub model: String,

    /// Other models a request may choose with `summarizer.model` (comma-separated).
    #[arg(
        id = "upstream.allowed_models",
        long = "upstream-allowed-models",
        value_delimiter = ','
    )]
    pub allowed_models: Vec<String>,

    /// Time limit of one upstream HTTP call. A bare number is seconds.
    // Half the request time limit: one slow call still leaves room to answer.
    #[arg(
        id = "upstream.timeout",
        long = "upstream-timeout",
        value_parser = duration::parse_secs,
        default_value = "60s"
    )]
    pub timeout: Duration,

    /// Time for an upstream call and its retries in all. A bare number is seconds.
    // Within the request time limit, so a request sees its retries' outcome.
    #[arg(
        id = "upstream.retry_budget",
        long = "upstream-retry-budget",
        value_parser = duration::parse_secs,
        default_value = duration::format(RetryPolicy::DEFAULT_BUDGET)
    )]
    pub retry_budget: Duration,

    /// Most retries of one upstream call.
    #[arg(
        id = "upstream.max_retries",
        long = "upstream-max-retries",
        default_value_t = RetryPolicy::DEFAULT_MAX_RETRIES
    )]
    pub max_retries: u32,

    /// Most upstream calls in flight at once.
    #[arg(
        id = "upstream.max_concurrency",
        long = "upstream-max-concurrency",
        default_value_t = 4
    )]
    pub max_concurrency: usize,

    /// Most summaries written ahead (precompute) at once; beyond, a new one
    /// is skipped, not queued. 0: none is (a due summary is then written on
    /// its turn).
    #[arg(
        id = "upstream.precompute_concurrency",
        long = "precompute-concurrency",
        default_value_t = crate::compress::PRECOMPUTE_CONCURRENCY
    )]
    pub precompute_concurrency: usize,

    /// The summarizer model's context window (prompt + output), for chunking.
    #[arg(
        id = "upstream.context_window",
        long = "upstream-context-window",
        default_value_t = 128_000
    )]
    pub context_window: usize,

    /// Longest tool result the LLM sees in a transcript, in characters (cut in the middle).
    #[arg(
        id = "upstream.result_chars",
        long = "upstream-result-chars",
        default_value_t = crate::summarize::llm::RESULT_CHARS
    )]
    pub result_chars: usize,
}

impl UpstreamSettings {
    /// The URL, when one is set (a blank one is none).
    pub fn url(&self) -> Option<&str> {
        self.url.as_deref().filter(|u| !u.trim().is_empty())
    }

    /// The upstream client's settings, when an upstream URL is configured.
    pub fn client(&self) -> Result<Option<UpstreamConfig>, Invalid> {
        let base = base_url("upstream.url", "CONDENSE_UPSTREAM_URL", self.url.as_deref())?;
        let Some(url) = base.url() else {
            return Ok(None);
        };
        Ok(Some(UpstreamConfig {
            kind: self.kind,
            base_url: url.clone(),
            api_key: self.api_key.clone(),
            model: self.model.clone(),
            allowed_models: self.allowed_models.clone(),
            timeout: self.timeout.max(MIN_PERIOD),
            retry: RetryPolicy {
                max_retries: self.max_retries,
                budget: self.retry_budget.max(MIN_PERIOD),
                ..RetryPolicy::default()
            },
            max_concurrency: self.max_concurrency,
            context_window: self.context_window,
            result_chars: self.result_chars.max(40),
        }))
    }
}
