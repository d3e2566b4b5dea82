//! The summary service: heuristic, or the upstream LLM with fallback, with
//! identical requests in flight sharing one upstream call.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::OnceCell;

use super::{Strategy, llm};
use crate::cache::{Cache, CacheError, CachedSummary, Claim};
use crate::compress::{SummaryJob, Written};
use crate::tokens::Counter;
use crate::upstream::{Upstream, UpstreamError};

/// What to do when the upstream fails after its retries.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnUpstreamError {
    /// Answer with a heuristic summary, `degraded: true` and a warning.
    #[default]
    Fallback,
    /// Answer 502; the caller keeps its thread.
    Fail,
}

type Flight = Arc<OnceCell<Result<Written, UpstreamError>>>;

pub struct SummaryService {
    upstream: Option<Upstream>,
    cache: Cache,
    /// In-flight summaries by content hash (single flight within a process;
    /// the cache's claims do the same across replicas).
    flights: Mutex<HashMap<String, Flight>>,
}

impl SummaryService {
    pub fn new(upstream: Option<Upstream>, cache: Cache) -> Self {
        Self {
            upstream,
            cache,
            flights: Mutex::default(),
        }
    }

    pub fn upstream(&self) -> Option<&Upstream> {
        self.upstream.as_ref()
    }

    pub fn cache(&self) -> &Cache {
        &self.cache
    }

    /// Writes the summary of `job`, from the cache when it holds it.
    /// `Err` only for an upstream failure under `OnUpstreamError::Fail`.
    pub async fn write(
        &self,
        job: &SummaryJob,
        c: &Counter<'static>,
        model: Option<&str>,
        on_error: OnUpstreamError,
    ) -> Result<Written, UpstreamError> {
        let up = match (job.strategy, &self.upstream) {
            (Strategy::Llm | Strategy::Hybrid, Some(up)) => Some(up),
            _ => None,
        };
        let strategy = if up.is_some() {
            job.strategy
        } else {
            Strategy::Heuristic
        };
        let model = up.map(|up| model.map_or_else(|| up.config().model.clone(), str::to_string));
        let key = job.key(strategy, model.as_deref());
        let result = self
            .once(&key, || {
                self.cached(job, strategy, model.as_deref(), &key, c)
            })
            .await;
        match (result, on_error) {
            (Ok(w), _) => Ok(w),
            (Err(e), OnUpstreamError::Fail) => Err(e),
            (Err(e), OnUpstreamError::Fallback) => {
                tracing::warn!(error = %e, "upstream summary failed; falling back to the heuristic");
                let mut w = heuristic(job, c).await;
                w.degraded = true;
                w.warnings.push(format!(
                    "the upstream LLM failed ({e}); a heuristic summary was used instead"
                ));
                Ok(w)
            }
        }
    }

    /// The cache in front of [`Self::compute`]: a hit, another replica's
    /// result, or computed here and stored. The cache never stands in the
    /// caller's way: when it fails, the summary is computed uncached.
    async fn cached(
        &self,
        job: &SummaryJob,
        strategy: Strategy,
        model: Option<&str>,
        key: &str,
        c: &Counter<'static>,
    ) -> Result<Written, UpstreamError> {
        if matches!(self.cache, Cache::Off) {
            return self.compute(job, strategy, model, key, c).await;
        }
        let down = |e: CacheError| {
            format!("the summary cache is unavailable ({e}); this summary was not cached")
        };
        match self.cache.get(key).await {
            Ok(Some(hit)) => return Ok(from_entry(hit)),
            Ok(None) => {}
            Err(e) => return self.uncached(job, strategy, model, key, c, down(e)).await,
        }
        let lease = self.lease();
        match self.cache.claim(key, lease).await {
            Ok(Claim::Claimed) => {
                // Another replica may have stored it between our miss and our claim.
                if let Ok(Some(hit)) = self.cache.get(key).await {
                    let _ = self.cache.release(key).await;
                    return Ok(from_entry(hit));
                }
                let result = self
                    .compute_reusing_prefix(job, strategy, model, key, c)
                    .await;
                match &result {
                    Ok(w) => match self.cache.put(&to_entry(w, job, strategy, model)).await {
                        // First write wins: every replica answers with the stored bytes.
                        Ok(stored) => {
                            return Ok(Written {
                                cached: false,
                                usage: w.usage,
                                ..from_entry(stored)
                            });
                        }
                        Err(e) => {
                            let _ = self.cache.release(key).await;
                            return Ok(with_warning(w.clone(), down(e)));
                        }
                    },
                    Err(_) => {
                        let _ = self.cache.release(key).await;
                    }
                }
                result
            }
            Ok(Claim::Busy) => match self
                .cache
                // Bounded well inside the request's time: past it, compute here.
                .wait_for(key, Duration::from_millis(200))
                .await
            {
                Ok(Some(hit)) => Ok(from_entry(hit)),
                _ => self.compute(job, strategy, model, key, c).await,
            },
            Err(e) => self.uncached(job, strategy, model, key, c, down(e)).await,
        }
    }

    async fn uncached(
        &self,
        job: &SummaryJob,
        strategy: Strategy,
        model: Option<&str>,
        key: &str,
        c: &Counter<'static>,
        warning: String,
    ) -> Result<Written, UpstreamError> {
        tracing::warn!(%warning, "summary cache unavailable");
        self.compute(job, strategy, model, key, c)
            .await
            .map(|w| with_warning(w, warning))
    }

    /// Reuses the cached summary of the longest already-summarized prefix of
    /// the span, summarizing only the messages after it.
    async fn compute_reusing_prefix(
        &self,
        job: &SummaryJob,
        strategy: Strategy,
        model: Option<&str>,
        key: &str,
        c: &Counter<'static>,
    ) -> Result<Written, UpstreamError> {
        let hashes = job.prefix_hashes(strategy, model);
        let shorter = &hashes[..hashes.len().saturating_sub(1)];
        if let Ok(Some(prefix)) = self.cache.find_prefix(shorter).await {
            // How many messages the matched prefix covers in *this* span.
            if let Some(at) = shorter.iter().position(|h| *h == prefix.prefix_hash) {
                let done = at + 1;
                let rest = SummaryJob {
                    span: job.span[done..].to_vec(),
                    prior: Some(prefix.content),
                    ..job.clone()
                };
                tracing::debug!(
                    reused = done,
                    new = rest.span.len(),
                    "extending a cached prefix summary"
                );
                return self.compute(&rest, strategy, model, key, c).await;
            }
        }
        self.compute(job, strategy, model, key, c).await
    }

    /// How long a claim holds: an upstream call with all its retries.
    fn lease(&self) -> Duration {
        self.upstream.as_ref().map_or(Duration::from_secs(10), |u| {
            u.config().retry.budget + Duration::from_secs(5)
        })
    }

    async fn compute(
        &self,
        job: &SummaryJob,
        strategy: Strategy,
        model: Option<&str>,
        key: &str,
        c: &Counter<'static>,
    ) -> Result<Written, UpstreamError> {
        match (strategy, &self.upstream, model) {
            (Strategy::Llm | Strategy::Hybrid, Some(up), Some(model)) => {
                self.call(up, model, job, key, c).await
            }
            _ => {
                let mut w = heuristic(job, c).await;
                w.key = key.to_string();
                Ok(w)
            }
        }
    }

    async fn call(
        &self,
        up: &Upstream,
        model: &str,
        job: &SummaryJob,
        key: &str,
        c: &Counter<'static>,
    ) -> Result<Written, UpstreamError> {
        let (content, usage) = match job.strategy {
            Strategy::Hybrid => {
                // Half the room each: the extracted identifiers, then the story.
                let half = job.limit / 2;
                let (sections_prior, narrative_prior) = split_hybrid(job.prior.as_deref());
                let sections =
                    super::heuristic(&job.span, sections_prior, half, |s| c.text(s).tokens);
                let (story, usage) = llm::write(up, model, job, narrative_prior, half, c).await?;
                (format!("{sections}\n\n{NARRATIVE}\n{story}"), usage)
            }
            _ => llm::write(up, model, job, job.prior.as_deref(), job.limit, c).await?,
        };
        let mut w = Written::new(
            content,
            job.strategy,
            Some(model.to_string()),
            key.to_string(),
        );
        w.usage = Some(usage);
        Ok(w)
    }

    /// Runs `work` once per key among concurrent callers; all get its result.
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

fn with_warning(mut w: Written, warning: String) -> Written {
    w.warnings.push(warning);
    w
}

fn from_entry(e: CachedSummary) -> Written {
    let strategy = match e.strategy.as_str() {
        "llm" => Strategy::Llm,
        "hybrid" => Strategy::Hybrid,
        _ => Strategy::Heuristic,
    };
    Written {
        content: e.content,
        strategy,
        model: e.model,
        key: e.key,
        created_at: e.created_at,
        cached: true,
        degraded: false,
        usage: None,
        warnings: Vec::new(),
    }
}

fn to_entry(
    w: &Written,
    job: &SummaryJob,
    strategy: Strategy,
    model: Option<&str>,
) -> CachedSummary {
    let hashes = job.prefix_hashes(strategy, model);
    CachedSummary {
        key: w.key.clone(),
        prefix_hash: hashes.last().cloned().unwrap_or_else(|| w.key.clone()),
        span_len: job.span.len() as i64,
        content: w.content.clone(),
        messages_summarized: job.span.len() as i64,
        token_count: 0,
        strategy: w.strategy.as_str().to_string(),
        model: w.model.clone(),
        created_at: w.created_at.clone(),
    }
}

/// The heuristic on the blocking pool: extraction over a long span is CPU
/// work that must not stall the async workers.
async fn heuristic(job: &SummaryJob, c: &Counter<'static>) -> Written {
    let (job, c) = (job.clone(), *c);
    tokio::task::spawn_blocking(move || job.heuristic(&c))
        .await
        .expect("the heuristic summarizer does not panic")
}

/// Header that separates a hybrid summary's sections from its narrative.
pub const NARRATIVE: &str = "### Narrative";

fn split_hybrid(prior: Option<&str>) -> (Option<&str>, Option<&str>) {
    match prior.map(|p| p.split_once(NARRATIVE)) {
        Some(Some((sections, story))) => (Some(sections.trim()), Some(story.trim())),
        Some(None) => (prior, prior),
        None => (None, None),
    }
}
