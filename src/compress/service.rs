//! [`Compressor`]: the one way through a compression, for every entry point.

use std::sync::Arc;

use super::continuity::Anchor;
use super::meter::Meter;
use super::plan::{self, Planned, Stage};
use super::precompute::{Job, Precompute, Precomputer, ready};
use super::{Compression, Error, Hashes, History, Mode, Outcome, Ready, Reason, Setup};
use crate::admission::memory;
use crate::metrics::Metrics;
use crate::summarize::{Strategy, SummaryService, cpu};
use crate::thread::Shape;
use crate::tokens::{Encoders, ModelRegistry};

/// Plans, has the summary written, finishes. Cheap to share (`Arc` inside).
pub struct Compressor {
    /// How requests count: shared with the counts and verdicts.
    meter: Meter,
    summarizer: Arc<SummaryService>,
    /// Summaries written ahead, in the background.
    precomputer: Precomputer,
}

/// What precompute needs besides the plan: the request as it came (planned
/// again for a job) and its history's hashes.
struct Spare {
    req: Compression,
    setup: Setup,
    anchor: Arc<Anchor>,
}

impl Compressor {
    pub fn new(meter: Meter, summarizer: Arc<SummaryService>) -> Self {
        Self {
            meter,
            summarizer,
            precomputer: Precomputer::default(),
        }
    }

    /// Writes summaries ahead with `precomputer` instead of the default one.
    pub fn with_precomputer(self, precomputer: Precomputer) -> Self {
        Self {
            precomputer,
            ..self
        }
    }

    pub fn precomputer(&self) -> &Precomputer {
        &self.precomputer
    }

    /// Embedded models, `gpt-4o` by default, no upstream and no cache: the one
    /// path, for benchmarks and property tests.
    pub fn offline() -> Self {
        Self::new(
            Meter::new(
                Arc::new(ModelRegistry::embedded()),
                "gpt-4o",
                Encoders::global(),
            ),
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
    /// single flight, maybe an upstream call) in between. A request that
    /// breaks a rule of its settings ([`Compression::check`]) is refused
    /// first, whichever entry point built it.
    pub async fn run(&self, req: Compression) -> Result<Outcome, Error> {
        req.check()?;
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
        record_saved(m, &outcome);
        Ok(outcome)
    }

    async fn compress(&self, mut req: Compression, mut setup: Setup) -> Result<Outcome, Error> {
        if req.continuity || self.precomputes(&req, &setup) {
            (req, setup) = cpu(move || {
                setup.anchor = Hashes::Made(Arc::new(Anchor::new(&req, &setup)));
                (req, setup)
            })
            .await;
        }
        if req.continuity {
            self.continue_from_cache(&mut req, &mut setup).await;
        }
        let mut spare = None;
        if self.precomputes(&req, &setup) {
            // A spare copy of the request, planned again for a job. CPU work.
            (req, setup, spare) = cpu(move || {
                let spare = setup.anchor.made().cloned().map(|anchor| Spare {
                    req: req.clone(),
                    setup: setup.clone(),
                    anchor,
                });
                (req, setup, spare)
            })
            .await;
        }
        // Written ahead past the first message no summary covers: ready.
        let mut ready_past = None;
        if let Some(spare) = &spare {
            let ready = self.ready(&spare.anchor).await;
            ready_past = ready.as_ref().map(|r| r.cut);
            setup.mode = Mode::Hold { ready };
        }
        let planned = cpu(move || plan::plan(req, setup)).await?;
        let Some(spare) = spare else {
            return self.write_and_finish(planned).await;
        };
        let status = match planned.stage() {
            Stage::Quiet => None,
            Stage::Ahead { start } if ready_past.is_some_and(|cut| cut > start) => {
                Some(Precompute::Ready)
            }
            Stage::Ahead { start } => self.start(spare, start).await,
            Stage::Due { .. } if planned.adopts() => {
                self.metrics().precompute_due("used");
                Some(Precompute::Used)
            }
            Stage::Due { start, held } => {
                self.metrics()
                    .precompute_due(if held { "pending" } else { "waited" });
                // Not fitting, the request writes it now: no job for it.
                let started = match held {
                    true => self.start(spare, start).await,
                    false => None,
                };
                match started {
                    Some(Precompute::Skipped) => Some(Precompute::Skipped),
                    Some(_) => Some(Precompute::Pending),
                    None => None,
                }
            }
        };
        let mut outcome = self.write_and_finish(planned).await?;
        outcome.precompute = status;
        Ok(outcome)
    }

    /// The plan finished with its summary: written, or the one written
    /// ahead adopted (the swap rule).
    async fn write_and_finish(&self, planned: Planned) -> Result<Outcome, Error> {
        let mut plan = match planned {
            Planned::Done(outcome, _) => return Ok(*outcome),
            Planned::Pending(plan) => plan,
        };
        let (job, ready) = (plan.job.take(), plan.ready.take());
        let Some(mut job) = job else {
            return cpu(move || plan.finish(None)).await;
        };
        // A summary already stored needs no index: it has one.
        if ready.is_none()
            && let Some(hit) = self.summarizer.stored(&job).await
        {
            return cpu(move || plan.finish(Some(hit))).await;
        }
        (plan, job) = cpu(move || {
            plan.planner.index(&mut job, plan.start, plan.cut);
            (plan, job)
        })
        .await;
        let written = match ready {
            Some(ready) => self.summarizer.adopt(&job, ready).await,
            None => self.summarizer.write(&job).await.map_err(Error::Upstream)?,
        };
        cpu(move || plan.finish(Some(written))).await
    }

    /// The summary written ahead for the longest prefix of this history,
    /// if any. A cache that fails costs only the swap.
    async fn ready(&self, anchor: &Anchor) -> Option<Ready> {
        ready(&self.summarizer, anchor).await.unwrap_or_else(|e| {
            tracing::warn!(error = %e, "summary cache unavailable for precompute");
            None
        })
    }

    /// Whether `req` writes summaries ahead: it asks, its profile has
    /// `precompute_at`, there is a cache to keep them in and an upstream
    /// this caller may have write them (a heuristic summary costs no turn),
    /// and what earlier turns forwarded is known.
    fn precomputes(&self, req: &Compression, setup: &Setup) -> bool {
        req.precompute
            && req.profile.precompute_at > 0.0
            && self.summarizer.caches()
            && setup.model.is_some()
            && setup.history != History::Unknown
            && req.upstream_allowed
            && req.keep_recent_iterations.is_none()
            && matches!(
                req.strategy,
                Strategy::Auto | Strategy::Llm | Strategy::Hybrid
            )
    }

    /// Starts writing ahead the summary a due turn of this conversation
    /// would write now. None when there is nothing after `start`.
    async fn start(&self, spare: Spare, start: usize) -> Option<Precompute> {
        let name = spare.anchor.since(start)?.to_string();
        // The job holds the request's thread, as parsed.
        let memory = memory::parsed_bytes(&Shape::of_thread(&spare.req.thread));
        let job = Job {
            req: spare.req,
            setup: spare.setup,
            anchor: spare.anchor,
            name,
            memory,
        };
        Some(self.precomputer.start(self.summarizer.clone(), job).await)
    }

    /// Continuity mode: the latest cached summary of the longest prefix of
    /// the history becomes the request's previous summary. A cache that
    /// fails costs continuity for this turn, never the request.
    async fn continue_from_cache(&self, req: &mut Compression, setup: &mut Setup) {
        let Some(anchor) = setup.anchor.made().cloned() else {
            return;
        };
        // Without a cache, what earlier turns forwarded is unknown.
        setup.history = match self.summarizer.find(anchor.hashes(), false).await {
            _ if !self.summarizer.caches() => History::Unknown,
            Ok(found) => match found.and_then(|entry| anchor.prior(entry)) {
                Some((prior, in_use)) => {
                    req.prior = Some(prior);
                    History::Carried(in_use)
                }
                // A new conversation, or one forgotten: nothing says which.
                None => History::Unrecorded,
            },
            Err(e) => {
                tracing::warn!(error = %e, "summary cache unavailable for continuity");
                setup.warnings.push(
                    "the summary cache is unavailable; earlier summaries were not reused".into(),
                );
                History::Unknown
            }
        };
    }

    /// Records that a forwarded request carried `carried`, so later turns know
    /// which thinking saw it ([`binding`](super::binding)); a cache failure costs only that.
    pub async fn mark_carried(&self, carried: &super::Carried) {
        let marked = self
            .summarizer
            .mark_in_use(&carried.key, carried.in_use_from)
            .await;
        if let Err(e) = marked {
            tracing::warn!(error = %e, "could not record where a summary came into use");
        }
    }

    /// How to count, the window, and the upstream model, each decided here once.
    fn setup(&self, req: &Compression) -> Result<Setup, Error> {
        let spec = self
            .meter
            .spec(req.model.as_deref(), req.encoding, req.method);
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
            counter: self.meter.counter(&spec),
            context_window: req.profile.window_for(&spec),
            cache: spec.cache,
            model,
            warnings,
            anchor: match self.summarizer.caches() {
                true => Hashes::Later,
                false => Hashes::Off,
            },
            history: History::Known,
            mode: Mode::Now,
        })
    }
}

/// What a compression saved and what its summary cost, in the metrics.
fn record_saved(m: &Metrics, outcome: &Outcome) {
    if !outcome.compressed {
        return;
    }
    m.tokens_removed(outcome.tokens_before.saturating_sub(outcome.tokens_after));
    if let Some(u) = outcome.usage {
        m.summary_call_tokens("request", u.prompt_tokens + u.completion_tokens);
    }
    let source = match (&outcome.summary, outcome.reason) {
        _ if outcome.precompute == Some(Precompute::Used) => "precomputed",
        (Some(s), _) if s.cached => "cached",
        (Some(_), _) => "written",
        (None, Some(Reason::Continued)) => "continued",
        (None, _) => return,
    };
    m.summary_source(source);
}
