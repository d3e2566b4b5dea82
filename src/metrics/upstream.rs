//! The upstream requests (the summarizer LLM, the providers' counting
//! endpoints): each one recorded however it ends.

use std::time::{Duration, Instant};

use prometheus_client::encoding::EncodeLabelSet;

use super::Metrics;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct Kind {
    kind: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct KindError {
    kind: &'static str,
    error: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct KindTokens {
    kind: &'static str,
    r#type: &'static str,
}

impl Metrics {
    /// One HTTP request to the summarizer LLM is starting; the guard records
    /// its outcome and time (an attempt dropped unfinished, cut by the retry
    /// budget or by a client that went away, counts as error `abandoned`).
    pub fn upstream_attempt(&self, kind: &'static str) -> UpstreamAttempt {
        UpstreamAttempt {
            metrics: self.clone(),
            kind,
            started: Instant::now(),
            done: false,
        }
    }

    fn upstream_finished(&self, kind: &'static str, elapsed: Duration, outcome: Outcome) {
        let m = &self.0.domain;
        m.upstream_requests.get_or_create(&Kind { kind }).inc();
        m.upstream_duration
            .get_or_create(&Kind { kind })
            .observe(elapsed.as_secs_f64());
        match outcome {
            Outcome::Answered { prompt, completion } => {
                for (r#type, n) in [("prompt", prompt), ("completion", completion)] {
                    m.upstream_tokens
                        .get_or_create(&KindTokens { kind, r#type })
                        .inc_by(n);
                }
            }
            Outcome::Failed(error) => {
                m.upstream_errors
                    .get_or_create(&KindError { kind, error })
                    .inc();
            }
        }
    }
}

enum Outcome {
    Answered { prompt: u64, completion: u64 },
    Failed(&'static str),
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
        self.finish(Outcome::Answered {
            prompt: prompt_tokens,
            completion: completion_tokens,
        });
    }

    /// It failed with `error` (a fixed word: `timeout`, `connect`, `status_5xx`…).
    pub fn failed(mut self, error: &'static str) {
        self.finish(Outcome::Failed(error));
    }

    fn finish(&mut self, outcome: Outcome) {
        self.done = true;
        self.metrics
            .upstream_finished(self.kind, self.started.elapsed(), outcome);
    }
}

impl Drop for UpstreamAttempt {
    fn drop(&mut self) {
        if !self.done {
            self.finish(Outcome::Failed("abandoned"));
        }
    }
}
