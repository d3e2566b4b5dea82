//! The summary service: heuristic, or the upstream LLM with fallback, with
//! identical requests in flight sharing one upstream call.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use tokio::sync::OnceCell;

use super::{Strategy, llm};
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

#[derive(Default)]
pub struct SummaryService {
    upstream: Option<Upstream>,
    /// In-flight LLM summaries by content hash.
    flights: Mutex<HashMap<String, Flight>>,
}

impl SummaryService {
    pub fn new(upstream: Option<Upstream>) -> Self {
        Self {
            upstream,
            flights: Mutex::default(),
        }
    }

    pub fn upstream(&self) -> Option<&Upstream> {
        self.upstream.as_ref()
    }

    /// Writes the summary of `job`. `Err` only for `OnUpstreamError::Fail`.
    pub async fn write(
        &self,
        job: &SummaryJob,
        c: &Counter<'_>,
        model: Option<&str>,
        on_error: OnUpstreamError,
    ) -> Result<Written, UpstreamError> {
        let up = match (job.strategy, &self.upstream) {
            (Strategy::Llm | Strategy::Hybrid, Some(up)) => up,
            _ => return Ok(job.heuristic(c)),
        };
        let model = model.map_or_else(|| up.config().model.clone(), str::to_string);
        let key = job.key(job.strategy, Some(&model));
        let result = self
            .once(&key, || self.call(up, &model, job, &key, c))
            .await;
        match (result, on_error) {
            (Ok(w), _) => Ok(w),
            (Err(e), OnUpstreamError::Fail) => Err(e),
            (Err(e), OnUpstreamError::Fallback) => {
                tracing::warn!(error = %e, "upstream summary failed; falling back to the heuristic");
                let mut w = job.heuristic(c);
                w.degraded = true;
                w.warnings.push(format!(
                    "the upstream LLM failed ({e}); a heuristic summary was used instead"
                ));
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
        c: &Counter<'_>,
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

/// Header that separates a hybrid summary's sections from its narrative.
pub const NARRATIVE: &str = "### Narrative";

fn split_hybrid(prior: Option<&str>) -> (Option<&str>, Option<&str>) {
    match prior.map(|p| p.split_once(NARRATIVE)) {
        Some(Some((sections, story))) => (Some(sections.trim()), Some(story.trim())),
        Some(None) => (prior, prior),
        None => (None, None),
    }
}
