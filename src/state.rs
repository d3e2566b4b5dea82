//! The state every handler shares: cheap to clone (one `Arc`).

use std::sync::Arc;
use std::time::Duration;

use crate::admission::{MemoryBudget, Overload};
use crate::cache::Cache;
use crate::compress::{Compressor, Meter, Precomputer};
use crate::config::{Config, MIN_PERIOD};
use crate::error::ApiError;
use crate::guard::{Access, Cors, Hosts, RateLimiter};
use crate::metrics::Metrics;
use crate::policy::Profiles;
use crate::proxy::{Proxy, ProxyConfig};
use crate::summarize::SummaryService;
use crate::tokens::cancel;
use crate::tokens::{Encoders, ModelRegistry};
use crate::upstream::{ProviderCounter, Upstream};

#[derive(Clone)]
pub struct AppState(Arc<Inner>);

pub struct Inner {
    /// Flags and environment, as read at start-up.
    pub config: Config,
    /// Model name prefix -> encoding, window, calibration.
    pub models: Arc<ModelRegistry>,
    /// Named threshold sets.
    pub profiles: Arc<Profiles>,
    /// Writes summaries (heuristic, or the upstream LLM), behind the cache.
    pub summarizer: Arc<SummaryService>,
    /// The compression service every entry point calls.
    pub compressor: Arc<Compressor>,
    /// Counts and verdicts; asks the providers for exact counts.
    pub meter: Meter,
    /// The drop-in proxy (its routes answer 501 until a provider URL is set).
    pub proxy: Proxy,
    /// The API keys in force (none: access control is off).
    pub access: Arc<Access>,
    /// The per-caller token buckets (None: no rate limit).
    pub rate: Option<RateLimiter>,
    /// The places among the requests at work.
    pub overload: Overload,
    /// The bytes the requests at work may hold (see `admission::memory`).
    pub memory: MemoryBudget,
    /// The origins browsers may call from (None: no CORS).
    pub cors: Option<Cors>,
    /// The names a request's `Host` may carry.
    pub hosts: Hosts,
    /// The registry `GET /metrics` renders.
    pub metrics: Metrics,
}

impl std::ops::Deref for AppState {
    type Target = Inner;
    fn deref(&self) -> &Inner {
        &self.0
    }
}

impl AppState {
    /// The state with the summary cache `config` names, checked in the
    /// background; a database down at start does not stop the service.
    pub async fn connect(config: Config) -> anyhow::Result<Self> {
        let cache = Cache::connect(&config.cache.url(), config.cache.options()).await?;
        let check = config.cache.health_check();
        let state = Self::with_cache(config, cache)?;
        // `/readyz` reads what this finds (see `cache::health`).
        state.summarizer.watch_cache(check);
        Ok(state)
    }

    /// The state without a summary cache (tests, `condense config`).
    pub fn new(config: Config) -> anyhow::Result<Self> {
        Self::with_cache(config, Cache::Off)
    }

    /// Loads encoders, the model registry and the profiles named by `config`.
    pub fn with_cache(config: Config, cache: Cache) -> anyhow::Result<Self> {
        let encoders = Encoders::global();
        let models = Arc::new(match &config.models.models_file {
            Some(path) => ModelRegistry::from_file(path)?,
            None => ModelRegistry::embedded(),
        });
        let profiles = Arc::new(match &config.models.profiles_file {
            Some(path) => Profiles::from_file(path)?,
            None => Profiles::default(),
        });
        let upstream = config.upstream.client()?.map(Upstream::new).transpose()?;
        let metrics = Metrics::new();
        let summarizer =
            Arc::new(SummaryService::new(upstream, cache).with_metrics(metrics.clone()));
        let memory = MemoryBudget::new(config.limits.memory_budget_bytes);
        let provider_count =
            ProviderCounter::new(config.count.client()?)?.with_metrics(metrics.clone());
        let meter = Meter::new(models.clone(), &config.models.default_model, encoders)
            .with_provider(provider_count)
            .with_metrics(metrics.clone());
        // A summary written ahead takes memory from the requests' budget.
        let compressor = Arc::new(
            Compressor::new(meter.clone(), summarizer.clone()).with_precomputer(Precomputer::new(
                config.upstream.precompute_concurrency,
                memory.clone(),
            )),
        );
        let proxy = Proxy::new(
            ProxyConfig {
                urls: config.proxy.urls()?,
                api_key: config.proxy.api_key.clone(),
                shadow: config.proxy.shadow,
                idle_timeout: config.proxy.idle_timeout.max(MIN_PERIOD),
                prepare_timeout: config.limits.request_timeout.max(Duration::from_secs(1)),
                limits: config.limits.thread(),
            },
            compressor.clone(),
            profiles.clone(),
        )?;
        let access = Arc::new(Access::new(config.access.keys())?);
        let rate = RateLimiter::new(
            config.access.rate_limit_per_sec,
            config.access.rate_limit_burst,
        );
        let overload = Overload::new(config.limits.max_concurrency);
        let cors = Cors::parse(&config.access.cors_origins)?;
        let hosts = Hosts::parse(&config.access.allowed_hosts, access.enabled())?;
        Ok(Self(Arc::new(Inner {
            memory,
            access,
            rate,
            overload,
            cors,
            hosts,
            config,
            models,
            profiles,
            summarizer,
            compressor,
            proxy,
            meter,
            metrics,
        })))
    }

    /// Runs CPU-bound work with this state on the blocking pool ([`cancel::cpu`]).
    pub async fn cpu<T, F>(&self, work: F) -> Result<T, ApiError>
    where
        F: FnOnce(&AppState) -> Result<T, ApiError> + Send + 'static,
        T: Send + 'static,
    {
        let state = self.clone();
        cancel::cpu(move || work(&state)).await
    }
}
