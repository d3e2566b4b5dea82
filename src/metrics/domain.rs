//! What the service does for its callers: tokens counted, compressions,
//! summaries, the summary cache, the upstream LLM and the proxy.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use super::Metrics;
use super::upstream::{Kind, KindError, KindTokens};

/// Which cache lookup: a summary by its content hash, or the longest
/// summarized prefix of a span (continuity, prefix reuse).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup {
    Summary,
    Prefix,
    /// A summary written ahead of its turn (precompute).
    Ahead,
}

impl Lookup {
    fn as_str(self) -> &'static str {
        match self {
            Lookup::Summary => "summary",
            Lookup::Prefix => "prefix",
            Lookup::Ahead => "precomputed",
        }
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Counting {
    encoding: &'static str,
    method: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Compressed {
    compressed: bool,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Strategy {
    strategy: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CacheLookup {
    backend: &'static str,
    lookup: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CacheOperation {
    backend: &'static str,
    operation: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ProviderStatus {
    provider: &'static str,
    status: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ProviderReason {
    provider: &'static str,
    reason: &'static str,
}

pub(super) struct Domain {
    counted_tokens: Family<Counting, Counter>,
    compressions: Family<Compressed, Counter>,
    input_tokens: Counter,
    output_tokens: Counter,
    summaries: Family<Strategy, Counter>,
    degraded: Counter,
    cache_hits: Family<CacheLookup, Counter>,
    cache_misses: Family<CacheLookup, Counter>,
    cache_errors: Family<CacheOperation, Counter>,
    pub(super) upstream_requests: Family<Kind, Counter>,
    pub(super) upstream_errors: Family<KindError, Counter>,
    pub(super) upstream_duration: Family<Kind, Histogram, fn() -> Histogram>,
    pub(super) upstream_tokens: Family<KindTokens, Counter>,
    proxied: Family<ProviderStatus, Counter>,
    unchanged: Family<ProviderReason, Counter>,
}

impl Domain {
    pub(super) fn register(r: &mut Registry) -> Self {
        let m = Self {
            counted_tokens: Family::default(),
            compressions: Family::default(),
            input_tokens: Counter::default(),
            output_tokens: Counter::default(),
            summaries: Family::default(),
            degraded: Counter::default(),
            cache_hits: Family::default(),
            cache_misses: Family::default(),
            cache_errors: Family::default(),
            upstream_requests: Family::default(),
            upstream_errors: Family::default(),
            upstream_duration: Family::new_with_constructor(super::latency_histogram),
            upstream_tokens: Family::default(),
            proxied: Family::default(),
            unchanged: Family::default(),
        };
        r.register(
            "counted_tokens",
            "Tokens counted for callers (the total_tokens of tokens and verdict answers, the tokens_before of compressions), by encoding and method (bpe or chars)",
            m.counted_tokens.clone(),
        );
        r.register(
            "compressions",
            "Compressions run (API and proxy), by whether the thread was compressed",
            m.compressions.clone(),
        );
        r.register(
            "compression_input_tokens",
            "Tokens of the threads given to compression",
            m.input_tokens.clone(),
        );
        r.register(
            "compression_output_tokens",
            "Tokens of the threads compression returned",
            m.output_tokens.clone(),
        );
        r.register(
            "summaries_written",
            "Summaries written (not served from the cache), by the strategy that wrote them: heuristic, llm or hybrid",
            m.summaries.clone(),
        );
        r.register(
            "summaries_degraded",
            "Summaries the heuristic wrote because the upstream LLM failed (also counted under heuristic in summaries_written)",
            m.degraded.clone(),
        );
        r.register(
            "cache_hits",
            "Summary cache lookups that found an entry, by backend and lookup (summary or prefix)",
            m.cache_hits.clone(),
        );
        r.register(
            "cache_misses",
            "Summary cache lookups that found nothing, by backend and lookup (summary or prefix)",
            m.cache_misses.clone(),
        );
        r.register(
            "cache_errors",
            "Summary cache calls that failed (the request went on uncached), by backend and operation",
            m.cache_errors.clone(),
        );
        r.register(
            "upstream_requests",
            "HTTP requests to the summarizer LLM, retries included, and to providers' counting endpoints (kind count_*), by upstream kind",
            m.upstream_requests.clone(),
        );
        r.register(
            "upstream_errors",
            "Failed HTTP requests to the summarizer LLM or a counting endpoint, by upstream kind and error",
            m.upstream_errors.clone(),
        );
        r.register(
            "upstream_request_duration_seconds",
            "Time of one HTTP request to the summarizer LLM or a counting endpoint, by upstream kind",
            m.upstream_duration.clone(),
        );
        r.register(
            "upstream_tokens",
            "Tokens the summarizer LLM reported using, by upstream kind and type (prompt or completion)",
            m.upstream_tokens.clone(),
        );
        r.register(
            "proxy_forwarded_requests",
            "Requests the drop-in proxy forwarded, by provider and the provider's status",
            m.proxied.clone(),
        );
        r.register(
            "proxy_unchanged_requests",
            "Requests the drop-in proxy forwarded unchanged because of a problem on its side, by provider and reason",
            m.unchanged.clone(),
        );
        m
    }
}

impl Metrics {
    /// Tokens of a thread or text counted for a caller.
    pub fn tokens_counted(&self, encoding: &'static str, method: &'static str, tokens: usize) {
        self.0
            .domain
            .counted_tokens
            .get_or_create(&Counting { encoding, method })
            .inc_by(tokens as u64);
    }

    /// One finished compression and its token counts before and after.
    pub fn compression(&self, compressed: bool, before: usize, after: usize) {
        let m = &self.0.domain;
        m.compressions
            .get_or_create(&Compressed { compressed })
            .inc();
        m.input_tokens.inc_by(before as u64);
        m.output_tokens.inc_by(after as u64);
    }

    /// A summary written by `strategy` (`heuristic`, `llm`, `hybrid`).
    pub fn summary_written(&self, strategy: &'static str) {
        self.0
            .domain
            .summaries
            .get_or_create(&Strategy { strategy })
            .inc();
    }

    /// A heuristic summary standing in for an upstream that failed.
    pub fn summary_degraded(&self) {
        self.0.domain.degraded.inc();
    }

    /// A cache lookup that found an entry (`hit`) or nothing.
    pub fn cache_lookup(&self, backend: &'static str, lookup: Lookup, hit: bool) {
        let m = &self.0.domain;
        let family = if hit { &m.cache_hits } else { &m.cache_misses };
        family
            .get_or_create(&CacheLookup {
                backend,
                lookup: lookup.as_str(),
            })
            .inc();
    }

    /// A cache call that failed.
    pub fn cache_error(&self, backend: &'static str, operation: &'static str) {
        self.0
            .domain
            .cache_errors
            .get_or_create(&CacheOperation { backend, operation })
            .inc();
    }

    /// A request the proxy forwarded, and the provider's status.
    pub fn proxy_forwarded(&self, provider: &'static str, status: u16) {
        self.0
            .domain
            .proxied
            .get_or_create(&ProviderStatus {
                provider,
                status: super::status_label(status),
            })
            .inc();
    }

    /// A request the proxy forwarded unchanged because of a problem on its
    /// side, and which (`reason`: a fixed word, see `proxy::Unchanged`).
    pub fn proxy_unchanged(&self, provider: &'static str, reason: &'static str) {
        self.0
            .domain
            .unchanged
            .get_or_create(&ProviderReason { provider, reason })
            .inc();
    }
}
