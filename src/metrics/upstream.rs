//! The upstream requests (the summarizer LLM, the providers' counting
//! endpoints): each one recorded however it ends.

use std::borrow::Cow;
use std::time::Instant;

use super::{Metrics, add};

impl Metrics {
    /// One upstream HTTP request starts; the guard records how it ends (dropped: `abandoned`).
    pub fn upstream_attempt(&self, kind: &'static str) -> UpstreamAttempt {
        UpstreamAttempt {
            metrics: self.clone(),
            kind,
            started: Instant::now(),
            done: false,
        }
    }
}

/// One HTTP request to the summarizer LLM, recorded when it ends.
pub struct UpstreamAttempt {
    metrics: Metrics,
    kind: &'static str,
    started: Instant,
    done: bool,
}

impl UpstreamAttempt {
    /// It answered, using these tokens.
    pub fn answered(mut self, prompt_tokens: u64, completion_tokens: u64) {
        self.finish();
        let tokens = &self.metrics.0.f.upstream_tokens;
        for (r#type, n) in [("prompt", prompt_tokens), ("completion", completion_tokens)] {
            add(tokens, [("kind", self.kind), ("type", r#type)], n);
        }
    }

    /// It failed with `error` (a fixed word: `timeout`, `connect`, `status_5xx`…).
    pub fn failed(mut self, error: &'static str) {
        self.fail(error);
    }

    fn fail(&mut self, error: &'static str) {
        self.finish();
        let errors = &self.metrics.0.f.upstream_errors;
        add(errors, [("kind", self.kind), ("error", error)], 1);
    }

    /// Counts and times the request; what it ended in is the caller's to add.
    fn finish(&mut self) {
        self.done = true;
        let f = &self.metrics.0.f;
        let kind = [("kind", Cow::Borrowed(self.kind))];
        f.upstream_requests.get_or_create(&kind).inc();
        f.upstream_duration
            .get_or_create(&kind)
            .observe(self.started.elapsed().as_secs_f64());
    }
}

impl Drop for UpstreamAttempt {
    fn drop(&mut self) {
        if !self.done {
            self.fail("abandoned");
        }
    }
}
