//! What summaries saved and cost, and what precompute did: the numbers
//! behind the proxy's `x-condense-tokens-removed`,
//! `x-condense-summary-call-tokens`, `x-condense-prefix-reused` and
//! `x-condense-precompute` headers, summed over requests.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;

use super::Metrics;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Source {
    source: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct When {
    when: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct JobOutcome {
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DueResult {
    result: &'static str,
}

pub(super) struct Summaries {
    tokens_removed: Counter,
    call_tokens: Family<When, Counter>,
    sources: Family<Source, Counter>,
    jobs: Family<JobOutcome, Counter>,
    due: Family<DueResult, Counter>,
}

impl Summaries {
    pub(super) fn register(r: &mut Registry) -> Self {
        let m = Self {
            tokens_removed: Counter::default(),
            call_tokens: Family::default(),
            sources: Family::default(),
            jobs: Family::default(),
            due: Family::default(),
        };
        r.register(
            "compression_tokens_removed",
            "Tokens compressions took out of the threads they were given (tokens before minus after)",
            m.tokens_removed.clone(),
        );
        r.register(
            "summary_call_tokens",
            "Prompt and completion tokens of the summarizer LLM's calls, by when they ran: on a request's path (request) or written ahead in the background (ahead)",
            m.call_tokens.clone(),
        );
        r.register(
            "compression_summaries",
            "Compressed threads by the summary they carry: written on the request (written), found in the cache by its content (cached), written ahead and swapped in (precomputed), or the one earlier turns carried, its prefix reused byte for byte (continued)",
            m.sources.clone(),
        );
        r.register(
            "precompute_jobs",
            "Background summaries (precompute): started, skipped (skipped_busy: every slot taken; skipped_memory: the memory budget), and how each ended (written, found: already stored, elsewhere: another replica writes it, nothing: no span for the upstream, failed)",
            m.jobs.clone(),
        );
        r.register(
            "precompute_due_turns",
            "Turns on which a summary fell due with precompute on, by what happened: a summary written ahead was swapped in (used), it was not ready and the thread fit, so the request went on without it (pending), or the thread did not fit and the request waited for a summary (waited)",
            m.due.clone(),
        );
        m
    }
}

impl Metrics {
    /// A compression that took `n` tokens out of its thread.
    pub fn tokens_removed(&self, n: usize) {
        self.0.summaries.tokens_removed.inc_by(n as u64);
    }

    /// Tokens of summarizer calls: on a request's path (`request`) or
    /// written ahead (`ahead`).
    pub fn summary_call_tokens(&self, when: &'static str, n: u64) {
        self.0
            .summaries
            .call_tokens
            .get_or_create(&When { when })
            .inc_by(n);
    }

    /// A compressed thread carrying a summary from `source`.
    pub fn summary_source(&self, source: &'static str) {
        self.0
            .summaries
            .sources
            .get_or_create(&Source { source })
            .inc();
    }

    /// A background summary started, skipped, or ended so.
    pub fn precompute(&self, outcome: &'static str) {
        self.0
            .summaries
            .jobs
            .get_or_create(&JobOutcome { outcome })
            .inc();
    }

    /// A due turn with precompute on, and what happened.
    pub fn precompute_due(&self, result: &'static str) {
        self.0
            .summaries
            .due
            .get_or_create(&DueResult { result })
            .inc();
    }
}
