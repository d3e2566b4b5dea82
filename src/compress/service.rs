//! [`Compressor`]: the one way through a compression, for every entry point.

use std::sync::Arc;

use super::continuity::Anchor;
use super::plan::{self, Planned};
use super::{Compression, Error, Outcome, Setup};
use crate::metrics::Metrics;
use crate::summarize::{SummaryService, Writer, cpu, write_offline};
use crate::tokens::{CountSpec, Encoders, ModelRegistry};

/// Plans, has the summary written, finishes. Cheap to share (`Arc` inside).
pub struct Compressor {
    models: Arc<ModelRegistry>,
    /// The model assumed when a request names none.
    default_model: String,
    encoders: &'static Encoders,
    summarizer: Arc<SummaryService>,
}

impl Compressor {
    pub fn new(
        models: Arc<ModelRegistry>,
        default_model: impl Into<String>,
        encoders: &'static Encoders,
        summarizer: Arc<SummaryService>,
    ) -> Self {
        Self {
            models,
            default_model: default_model.into(),
            encoders,
            summarizer,
        }
    }

    /// A compressor with the embedded model registry, `gpt-4o` as the
    /// default model, no upstream and no cache: what [`Compressor::run_offline`]
    /// needs, for benchmarks, property tests and command-line use.
    pub fn offline() -> Self {
        Self::new(
            Arc::new(ModelRegistry::embedded()),
            "gpt-4o",
            Encoders::global(),
            Arc::new(SummaryService::new(None, crate::cache::Cache::Off)),
        )
    }

    pub fn summarizer(&self) -> &SummaryService {
        &self.summarizer
    }

    /// Where compressions are recorded: its summary service's metrics.
    pub fn metrics(&self) -> &Metrics {
        self.summarizer.metrics()
    }

    /// Compresses `req`: CPU work on the blocking pool, the summary (cache,
    /// single flight, maybe an upstream call) in between.
    pub async fn run(&self, req: Compression) -> Result<Outcome, Error> {
        let setup = self.setup(&req)?;
        let (encoding, method) = (setup.counter.encoding, setup.counter.method);
        let outcome = self.compress(req, setup).await?;
        let m = self.metrics();
        m.tokens_counted(encoding.as_str(), method.as_str(), outcome.tokens_before);
        m.compression(
            outcome.compressed,
            outcome.tokens_before,
            outcome.tokens_after,
        );
        Ok(outcome)
    }

    async fn compress(&self, req: Compression, setup: Setup) -> Result<Outcome, Error> {
        let (req, setup) = if req.continuity {
            self.continue_from_cache(req, setup).await
        } else {
            (req, setup)
        };
        let mut plan = match cpu(move || plan::plan(req, setup)).await? {
            Planned::Done(outcome) => return Ok(*outcome),
            Planned::Pending(plan) => plan,
        };
        let written = match plan.job.take() {
            Some(job) => Some(self.summarizer.write(&job).await.map_err(Error::Upstream)?),
            None => None,
        };
        cpu(move || plan.finish(written)).await
    }

    /// Continuity mode: the latest cached summary of the longest prefix of
    /// the history becomes the request's previous summary. A cache that
    /// fails costs continuity for this turn, never the request.
    async fn continue_from_cache(
        &self,
        mut req: Compression,
        mut setup: Setup,
    ) -> (Compression, Setup) {
        let (req_back, setup_back, anchor) = cpu(move || {
            let anchor = Anchor::new(&req, &setup);
            (req, setup, anchor)
        })
        .await;
        (req, setup) = (req_back, setup_back);
        // Without a cache, what earlier turns forwarded is unknown.
        setup.history_known = self.summarizer.caches();
        match self.summarizer.find_prefix(anchor.hashes()).await {
            Ok(Some(entry)) => {
                if let Some((prior, in_use)) = anchor.prior(entry) {
                    req.prior = Some(prior);
                    setup.in_use = Some(in_use);
                }
            }
            Ok(None) => {}
            Err(e) => {
                setup.history_known = false;
                tracing::warn!(error = %e, "summary cache unavailable for continuity");
                setup.warnings.push(
                    "the summary cache is unavailable; earlier summaries were not reused".into(),
                );
            }
        }
        setup.anchor = Some(anchor);
        (req, setup)
    }

    /// Records that a forwarded request carried `carried` (continuity mode):
    /// later turns then know which of their thinking blocks saw it (see
    /// [`binding`](super::binding)). A cache that fails costs only that.
    pub async fn mark_carried(&self, carried: &super::Carried) {
        let marked = self
            .summarizer
            .mark_in_use(&carried.key, carried.in_use_from)
            .await;
        if let Err(e) = marked {
            tracing::warn!(error = %e, "could not record where a summary came into use");
        }
    }

    /// The same on the calling thread, uncached, for strategies that need no
    /// upstream (`heuristic`, `truncate`, `auto` without an upstream):
    /// benchmarks, property tests, command-line use.
    pub fn run_offline(&self, req: Compression) -> Result<Outcome, Error> {
        let mut setup = self.setup(&req)?;
        setup.model = None;
        let mut plan = match plan::plan(req, setup)? {
            Planned::Done(outcome) => return Ok(*outcome),
            Planned::Pending(plan) => plan,
        };
        let written = plan.job.take().map(|job| {
            debug_assert_eq!(job.settings.writer, Writer::Heuristic);
            write_offline(&job)
        });
        plan.finish(written)
    }

    /// How to count, the window, and the upstream model, each decided here once.
    fn setup(&self, req: &Compression) -> Result<Setup, Error> {
        let spec = CountSpec::resolve(
            &self.models,
            &self.default_model,
            req.model.as_deref(),
            req.encoding,
            req.method,
        );
        let mut warnings = spec.warnings.clone();
        let requested = req.summarizer_model.as_deref();
        let model = self
            .summarizer
            .model(requested)
            .map_err(Error::ModelNotAllowed)?;
        if let (None, Some(m)) = (&model, requested) {
            warnings.push(format!(
                "`summarizer.model` ({}) is ignored: no upstream LLM is configured",
                crate::thread::echo(m)
            ));
        }
        Ok(Setup {
            counter: spec.counter(self.encoders),
            context_window: req.profile.context_window.unwrap_or(spec.context_window),
            model,
            warnings,
            anchor: None,
            in_use: None,
            history_known: true,
        })
    }
}
