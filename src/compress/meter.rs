//! [`Meter`]: counts and verdicts (`/v1/tokens`, `/v1/verdict`) with the
//! [`Compressor`](super::Compressor)'s models and encoders, so a count, a
//! verdict and a compression of one thread agree. A provider count only
//! improves on the local one: whatever stops it leaves a warning.

use std::sync::Arc;

use crate::metrics::Metrics;
use crate::policy::{self, PriorSummary, Profile, Verdict};
use crate::thread::{Outlined, Thread};
use crate::tokens::{
    CountSpec, Counted, Counter, Encoders, Encoding, MessageCount, Method, ModelRegistry,
    ThreadCount,
};
use crate::upstream::{CountCall, CountError, CountSource, Provenance, ProviderCounter};

/// Cheap to clone (`Arc`s inside).
#[derive(Clone)]
pub struct Meter {
    models: Arc<ModelRegistry>,
    /// The model assumed when a request names none.
    default_model: Arc<str>,
    encoders: &'static Encoders,
    /// None: nothing is asked of a provider (a meter for compressions only).
    provider: Option<ProviderCounter>,
    metrics: Metrics,
}

/// A provider count to ask for ([`Meter::ask`]), or why there is none.
pub type Ask = Result<CountCall, CountError>;

/// A verdict, on the local count until [`Meter::settle`] takes the provider's.
pub struct Judged {
    pub verdict: Verdict,
    pub provenance: Provenance,
    pub warnings: Vec<String>,
    profile: Profile,
    /// The whole thread's local count, when a `summary` object changes what the verdict measures.
    whole_thread: Option<u64>,
    ask: Option<Ask>,
}

impl Meter {
    pub fn new(
        models: Arc<ModelRegistry>,
        default_model: &str,
        encoders: &'static Encoders,
    ) -> Self {
        Self {
            models,
            default_model: default_model.into(),
            encoders,
            provider: None,
            metrics: Metrics::default(),
        }
    }

    /// Asks `provider` for the totals a request or profile wants from it.
    pub fn with_provider(self, provider: ProviderCounter) -> Self {
        Self {
            provider: Some(provider),
            ..self
        }
    }

    /// Records the tokens counted into `metrics`.
    pub fn with_metrics(self, metrics: Metrics) -> Self {
        Self { metrics, ..self }
    }

    /// How a request counts: its model (else the default), encoding, method.
    pub fn spec(
        &self,
        model: Option<&str>,
        encoding: Option<Encoding>,
        method: Method,
    ) -> CountSpec {
        CountSpec::resolve(&self.models, &self.default_model, model, encoding, method)
    }

    pub fn counter(&self, spec: &CountSpec) -> Counter<'static> {
        spec.counter(self.encoders)
    }

    /// Records `tokens` counted under `spec`.
    fn counted(&self, spec: &CountSpec, tokens: usize) {
        let (encoding, method) = (spec.encoding.as_str(), spec.method.as_str());
        self.metrics.tokens_counted(encoding, method, tokens);
    }

    /// A bare text's count (no message framing: a text is not a prompt).
    pub fn text(&self, spec: &CountSpec, text: &str) -> MessageCount {
        let count = self.counter(spec).text(text);
        self.counted(spec, count.tokens);
        count
    }

    /// A thread's count, and the provider count to ask for when `source` wants one.
    pub fn thread(
        &self,
        spec: &CountSpec,
        thread: &Thread,
        source: (CountSource, bool),
    ) -> (ThreadCount, Option<Ask>) {
        let count = self.counter(spec).thread(thread);
        self.counted(spec, count.total);
        (count, self.prepare(source, thread, &spec.model))
    }

    /// An outlined thread's count ([`Counter::outlined`]): its messages' records, and the count.
    pub fn outlined(
        &self,
        spec: &CountSpec,
        thread: Outlined<Arc<Counted>>,
    ) -> (Vec<Arc<Counted>>, ThreadCount) {
        let (messages, count) = self.counter(spec).outlined(thread);
        self.counted(spec, count.total);
        (messages, count)
    }

    /// The verdict on `thread` under `profile`, and the provider count to ask for.
    pub fn judge(
        &self,
        spec: &CountSpec,
        thread: &Thread,
        profile: Profile,
        prior: Option<&PriorSummary>,
        source: (CountSource, bool),
    ) -> Judged {
        let mut warnings = spec.warnings.clone();
        let in_thread =
            policy::summary_in_thread(thread, thread.pinned_len(), prior, &mut warnings).is_some();
        let counter = self.counter(spec);
        let window = profile.window_for(spec);
        let verdict = policy::verdict(thread, &counter, &profile, (window, spec.cache), prior);
        self.counted(spec, verdict.total_tokens as usize);
        let ask = self.prepare(source, thread, &spec.model);
        // Only a `summary` object makes the verdict measure other than what is sent.
        let whole_thread = (ask.is_some() && prior.is_some() && !in_thread)
            .then(|| counter.thread(thread).total as u64);
        Judged {
            verdict,
            provenance: Provenance::default(),
            warnings,
            profile,
            whole_thread,
            ask,
        }
    }

    /// The verdict decided again on the provider's count, when it answered.
    pub async fn settle(&self, mut judged: Judged) -> Judged {
        let Some(total) = self.ask(judged.ask.take(), &mut judged.warnings).await else {
            return judged;
        };
        let local = judged.verdict.total_tokens;
        let whole = judged.whole_thread;
        judged.verdict =
            policy::with_provider_total(&judged.verdict, &judged.profile, total, whole);
        judged.provenance = Provenance::provider(local);
        if whole.is_some() {
            judged.warnings.push(
                "the provider counted the whole thread; the messages the `summary` object covers \
                 and the summary that replaces them are local estimates"
                    .to_string(),
            );
        }
        judged
    }

    /// The request for `thread` when `source` asks the provider. The
    /// operator's key pays, so without the `provider` permission: a warning.
    fn prepare(&self, source: (CountSource, bool), thread: &Thread, model: &str) -> Option<Ask> {
        match source {
            (CountSource::Local, _) => None,
            (_, false) => Some(Err(CountError::NotPermitted)),
            _ => Some(self.provider.as_ref()?.prepare(thread, model)),
        }
    }

    /// The provider's total for `ask`, or None with the warning why not.
    pub async fn ask(&self, ask: Option<Ask>, warnings: &mut Vec<String>) -> Option<u64> {
        let counted = match ask? {
            Ok(call) => self.provider.as_ref()?.count(&call).await,
            Err(e) => Err(e),
        };
        counted.map_err(|e| warnings.push(e.warning())).ok()
    }
}
