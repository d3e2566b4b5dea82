//! The summary service: the cache in front of the summarizers, identical
//! requests sharing one computation (in this process, and across replicas
//! through the cache's claims), and the heuristic fallback.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use tokio::sync::OnceCell;

use super::request::{Form, SummaryRequest, UpstreamModel, Writer};
use super::sections::Sections;
use super::{Fidelity, Strategy, Usage, Written};
use crate::cache::{Cache, CacheError, CacheHealth, CachedSummary, HealthCheck};
use crate::metrics::{Lookup, Metrics};
use crate::upstream::{Upstream, UpstreamError};

type Flight = Arc<OnceCell<Result<Written, UpstreamError>>>;

/// How often a waiter looks for the summary another replica is writing.
const POLL: Duration = Duration::from_millis(250);

/// A claim that ends without a stored summary (its holder failed or gave up)
/// is retried this many times before computing without one.
const CLAIM_ATTEMPTS: usize = 3;

/// What a client is told when the cache fails: no database text.
const CACHE_DOWN: &str = "the summary cache is unavailable; this summary was not cached";

pub struct SummaryService {
    upstream: Option<Upstream>,
    cache: Cache,
    /// In-flight summaries by content hash.
    flights: Mutex<HashMap<String, Flight>>,
    metrics: Metrics,
    /// What cache calls and the background check last found (`/readyz`).
    health: CacheHealth,
    /// The background check, stopped when this service is dropped.
    checker: OnceLock<Checker>,
}

/// Aborts the cache's background check when dropped.
struct Checker(tokio::task::JoinHandle<()>);

impl Drop for Checker {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl SummaryService {
    pub fn new(upstream: Option<Upstream>, cache: Cache) -> Self {
        Self {
            upstream,
            cache,
            flights: Mutex::default(),
            metrics: Metrics::default(),
            health: CacheHealth::default(),
            checker: OnceLock::new(),
        }
    }

    /// Records into `metrics`, its upstream client too.
    pub fn with_metrics(self, metrics: Metrics) -> Self {
        Self {
            upstream: self.upstream.map(|u| u.with_metrics(metrics.clone())),
            metrics,
            ..self
        }
    }

    /// Where this service (and the compressor and proxy above it) record.
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    pub fn upstream(&self) -> Option<&Upstream> {
        self.upstream.as_ref()
    }

    pub fn cache(&self) -> &Cache {
        &self.cache
    }

    /// The cache's last known state: what `/readyz` reports.
    pub fn cache_health(&self) -> &CacheHealth {
        &self.health
    }

    /// Pings the cache in the background (once) while this service lives; needs Tokio.
    pub fn watch_cache(&self, check: HealthCheck) {
        self.checker
            .get_or_init(|| Checker(self.health.spawn_checker(self.cache.clone(), check)));
    }

    /// The upstream model a request gets (None without one); `Err` names the allowed.
    pub fn model(&self, requested: Option<&str>) -> Result<Option<UpstreamModel>, String> {
        let Some(up) = &self.upstream else {
            return Ok(None);
        };
        let name = up.choose_model(requested)?;
        Ok(Some(UpstreamModel {
            name,
            context_window: up.config().context_window,
            result_chars: up.config().result_chars,
            kind: up.config().kind,
        }))
    }

    /// Writes the summary `req` asks for, from the cache when it holds it.
    /// `Err` only for an upstream failure when `req.settings.fallback` is off.
    pub async fn write(&self, req: &SummaryRequest) -> Result<Written, UpstreamError> {
        let result = self.once(req.key(), || self.cached(req)).await;
        match result {
            Ok(w) => Ok(w),
            Err(e) if !req.settings.fallback => {
                tracing::warn!(error = %e, "upstream summary failed");
                Err(e)
            }
            Err(e) => {
                tracing::warn!(error = %e, "upstream summary failed; falling back to the heuristic");
                let fallback = super::cpu({
                    let req = req.clone();
                    move || req.with_writer(Writer::Heuristic)
                })
                .await;
                let mut w = self.compute(&fallback, 0, None).await?;
                self.metrics.summary_degraded();
                w.degraded = true;
                w.warnings.push(format!(
                    "the upstream LLM failed ({}); a heuristic summary was used instead",
                    e.short()
                ));
                Ok(w)
            }
        }
    }

    /// The summary of `req` if the cache holds it, counted as a hit; a miss
    /// or a failing cache is left for [`write`](Self::write) to count and handle.
    pub async fn stored(&self, req: &SummaryRequest) -> Option<Written> {
        if matches!(self.cache, Cache::Off) {
            return None;
        }
        match self.cache.get(req.key()).await {
            found @ Ok(Some(_)) => self.looked_up(Lookup::Summary, found).ok()?.map(from_entry),
            Ok(None) | Err(_) => None,
        }
    }

    /// A hit, another replica's result, or computed here and stored; when the
    /// cache fails, computed uncached.
    async fn cached(&self, req: &SummaryRequest) -> Result<Written, UpstreamError> {
        if matches!(self.cache, Cache::Off) {
            return self.compute(req, 0, None).await;
        }
        let key = req.key();
        for _ in 0..CLAIM_ATTEMPTS {
            match self.looked_up(Lookup::Summary, self.cache.get(key).await) {
                Ok(Some(hit)) => return Ok(from_entry(hit)),
                Ok(None) => {}
                Err(e) => return self.uncached(req, e).await,
            }
            let guard = match self.cache.claim_lease(key).await {
                Ok(Some(guard)) => guard,
                // Another caller is writing it: wait as long as its claim lives.
                Ok(None) => match self.cache.wait_for(key, POLL).await {
                    Ok(Some(hit)) => return Ok(self.hit(hit)),
                    Ok(None) => continue,
                    Err(e) => return self.uncached(req, self.failed("wait", e)).await,
                },
                Err(e) => return self.uncached(req, self.failed("claim", e)).await,
            };
            // Another replica may have stored it between our miss and our claim.
            if let Ok(Some(hit)) = self.cache.get(key).await {
                guard.release().await;
                return Ok(self.hit(hit));
            }
            let written = match guard.hold(self.reusing_prefix(req)).await {
                Ok(w) => w,
                Err(e) => {
                    guard.release().await;
                    return Err(e);
                }
            };
            return match guard.put(&to_entry(&written, req)).await {
                // First write wins: every replica answers with the stored bytes.
                Ok(stored) => Ok(Written {
                    cached: false,
                    usage: written.usage,
                    ..from_entry(stored)
                }),
                Err(e) => {
                    tracing::warn!(error = %self.failed("put", e), "storing a summary failed");
                    Ok(with_warning(written, CACHE_DOWN))
                }
            };
        }
        self.compute(req, 0, None).await
    }

    /// Another caller's summary, counted as a hit.
    fn hit(&self, e: CachedSummary) -> Written {
        self.metrics
            .cache_lookup(self.cache.backend(), Lookup::Summary, true);
        from_entry(e)
    }

    async fn uncached(
        &self,
        req: &SummaryRequest,
        e: CacheError,
    ) -> Result<Written, UpstreamError> {
        tracing::warn!(error = %e, "summary cache unavailable");
        self.compute(req, 0, None)
            .await
            .map(|w| with_warning(w, CACHE_DOWN))
    }

    /// Extends the cached summary of the span's longest summarized prefix.
    async fn reusing_prefix(&self, req: &SummaryRequest) -> Result<Written, UpstreamError> {
        let hashes = &req.prefixes;
        if !req.form.extends_prefixes() || hashes.len() < 2 {
            return self.compute(req, 0, None).await;
        }
        let shorter = &hashes[..hashes.len() - 1];
        if let Ok(Some(prefix)) = self.find(shorter, false).await {
            // Another writer's summary is not extended by this one.
            let at = shorter.iter().position(|h| *h == prefix.prefix_hash);
            if let Some(at) =
                at.filter(|_| prefix.strategy == req.settings.writer.strategy().as_str())
            {
                tracing::debug!(reused = at + 1, "extending a cached prefix summary");
                return self.compute(req, at + 1, Some(prefix.content)).await;
            }
        }
        self.compute(req, 0, None).await
    }

    /// Writes the summary of `req.span[from..]`, extending `prior` instead of
    /// `req.settings.prior` when given.
    async fn compute(
        &self,
        req: &SummaryRequest,
        from: usize,
        prior: Option<String>,
    ) -> Result<Written, UpstreamError> {
        // Written already, to be weighed, when it reads the whole span from its prior.
        let weighed = req
            .weighed
            .as_ref()
            .filter(|_| from == 0 && prior.is_none());
        let (content, fidelity, usage) = match weighed.and_then(|w| w.of(req)) {
            Some((content, fidelity)) => (content, Some(fidelity), None),
            None => self.fresh(req, from, prior).await?,
        };
        let strategy = req.settings.writer.strategy();
        self.metrics.summary_written(strategy.as_str());
        Ok(Written {
            content,
            strategy,
            model: req.settings.writer.model().map(|m| m.name.clone()),
            key: req.key().to_string(),
            created_at: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
            cached: false,
            degraded: false,
            usage,
            fidelity,
            warnings: Vec::new(),
        })
    }

    /// [`compute`](Self::compute)'s summary written here and repaired, with its receipt.
    async fn fresh(
        &self,
        req: &SummaryRequest,
        from: usize,
        prior: Option<String>,
    ) -> Result<(String, Option<Fidelity>, Option<Usage>), UpstreamError> {
        let prior = prior.or_else(|| req.settings.prior.clone());
        let (anchors, sections, writing) = super::receipt::prepare(req).await;
        // The heuristic writes from the anchors' extraction when it reads the whole span.
        let sections = (from == 0).then_some(sections);
        let (content, usage) = self.written(&writing, from, prior, sections).await?;
        // Repaired before it is cached: a hit carries the same bytes and receipt.
        Ok(match &req.settings.writer {
            // Encrypted: no anchor is checkable, and nothing may be appended.
            Writer::Provider(_) => (content, None, usage),
            _ => {
                let (content, fidelity) = super::receipt::repaired(req, anchors, content).await;
                (content, Some(fidelity), usage)
            }
        })
    }

    /// The summary's text as its writer wrote it (in `req`'s limit).
    async fn written(
        &self,
        req: &SummaryRequest,
        from: usize,
        prior: Option<String>,
        sections: Option<Sections>,
    ) -> Result<(String, Option<Usage>), UpstreamError> {
        Ok(match (&req.form, &req.settings.writer, &self.upstream) {
            (Form::Iterations(_), ..) => {
                super::iterations::write(self.upstream.as_ref(), req, prior).await?
            }
            (Form::Running, Writer::Llm(model), Some(up)) => {
                let (text, usage) =
                    super::llm::write(up, model, req, from, prior, req.settings.limit).await?;
                (text, Some(usage))
            }
            (Form::Running, Writer::Provider(model), up) => {
                let (item, usage) =
                    super::provider::write(up.as_ref(), model, req, from, prior).await?;
                (item, Some(usage))
            }
            (Form::Running, Writer::Hybrid(model), Some(up)) => {
                let (text, usage) = super::hybrid::write(up, model, req, from, prior).await?;
                (text, Some(usage))
            }
            _ => (
                super::heuristic::write(req, from, prior, sections).await,
                None,
            ),
        })
    }

    /// A summary written ahead, now due, stored under `req`'s key and index so
    /// later turns find it; a failing cache costs only the index.
    pub async fn adopt(&self, req: &SummaryRequest, ahead: CachedSummary) -> Written {
        let w = Written {
            key: req.key().to_string(),
            ..from_entry(ahead)
        };
        match self.cache.put(&to_entry(&w, req)).await {
            Ok(stored) => from_entry(stored),
            Err(e) => {
                tracing::warn!(error = %self.failed("put", e), "indexing a precomputed summary failed");
                w
            }
        }
    }

    /// Whether summaries are stored at all (the cache is not `off`).
    pub fn caches(&self) -> bool {
        !matches!(self.cache, Cache::Off)
    }

    /// Records that a forwarded request carried `key` ([`CachedSummary::in_use_from`]).
    pub async fn mark_in_use(&self, key: &str, in_use_from: usize) -> Result<(), CacheError> {
        let n = i64::try_from(in_use_from).unwrap_or(i64::MAX);
        let marked = self.cache.mark_in_use(key, n).await;
        self.observed(marked)
    }

    /// The latest summary of the longest of these index hashes ([`Cache::find_prefix`]),
    /// among those written ahead when `ahead`; the lookup counted.
    pub async fn find(
        &self,
        hashes: &[String],
        ahead: bool,
    ) -> Result<Option<CachedSummary>, CacheError> {
        if !ahead {
            return self.looked_up(Lookup::Prefix, self.cache.find_prefix(hashes).await);
        }
        let hashes: Vec<String> = hashes.iter().map(|h| super::ahead(h)).collect();
        self.looked_up(Lookup::Ahead, self.cache.find_prefix(&hashes).await)
    }

    /// Counts a lookup's hit, miss or error (none without a cache).
    fn looked_up<T>(
        &self,
        lookup: Lookup,
        result: Result<Option<T>, CacheError>,
    ) -> Result<Option<T>, CacheError> {
        let backend = self.cache.backend();
        let result = self.observed(result);
        match &result {
            _ if matches!(self.cache, Cache::Off) => {}
            Ok(found) => self.metrics.cache_lookup(backend, lookup, found.is_some()),
            Err(_) => {
                let operation = match lookup {
                    Lookup::Summary => "get",
                    Lookup::Prefix | Lookup::Ahead => "find_prefix",
                };
                self.metrics.cache_error(backend, operation);
            }
        }
        result
    }

    /// Counts a failed cache call; the error goes on.
    fn failed(&self, operation: &'static str, e: CacheError) -> CacheError {
        self.metrics.cache_error(self.cache.backend(), operation);
        self.health.failed(&e);
        e
    }

    /// Tells the cache's health what a call found (nothing when it is off).
    fn observed<T>(&self, result: Result<T, CacheError>) -> Result<T, CacheError> {
        if !matches!(self.cache, Cache::Off) {
            self.health.observe(&result);
        }
        result
    }

    /// Runs `work` once per key among concurrent callers, who all get its
    /// result; if its caller is cancelled, the next one takes over.
    async fn once<F, Fut>(&self, key: &str, work: F) -> Result<Written, UpstreamError>
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = Result<Written, UpstreamError>>,
    {
        let cell = {
            let mut flights = self.flights.lock().unwrap_or_else(|p| p.into_inner());
            flights.entry(key.to_string()).or_default().clone()
        };
        let result = cell.get_or_init(work).await.clone();
        // The first caller out clears the slot, so a later request calls again.
        let mut flights = self.flights.lock().unwrap_or_else(|p| p.into_inner());
        if flights.get(key).is_some_and(|c| Arc::ptr_eq(c, &cell)) {
            flights.remove(key);
        }
        result
    }
}

fn with_warning(mut w: Written, warning: &str) -> Written {
    w.warnings.push(warning.to_string());
    w
}

fn from_entry(e: CachedSummary) -> Written {
    Written {
        content: e.content,
        strategy: serde_json::from_value(e.strategy.into()).unwrap_or(Strategy::Heuristic),
        model: e.model,
        key: e.key,
        created_at: e.created_at,
        cached: true,
        degraded: false,
        usage: None,
        fidelity: e.fidelity.and_then(|f| serde_json::from_str(&f).ok()),
        warnings: Vec::new(),
    }
}

fn to_entry(w: &Written, req: &SummaryRequest) -> CachedSummary {
    let (prefix_hash, span_len, messages_summarized) = match &req.index {
        Some(i) => (i.hash.clone(), i.span_len, i.messages_summarized),
        None => (w.key.clone(), req.span.len(), req.span_messages),
    };
    CachedSummary {
        key: w.key.clone(),
        prefix_hash,
        span_len: span_len as i64,
        content: w.content.clone(),
        messages_summarized: messages_summarized as i64,
        // A summary is at most a few thousand tokens: cheap to count here.
        token_count: req.settings.counter.text(&w.content).tokens as i64,
        strategy: w.strategy.as_str().to_string(),
        model: w.model.clone(),
        created_at: w.created_at.clone(),
        // Set once a forwarded request carries it (`mark_in_use`).
        in_use_from: None,
        fidelity: w.fidelity.and_then(|f| serde_json::to_string(&f).ok()),
    }
}
