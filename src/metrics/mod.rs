//! Prometheus metrics: what `GET /metrics` exposes. One registry per
//! [`Metrics`], not a process-wide recorder, so two routers in one process
//! (tests) count apart. A leaf, so every layer may record; label values are
//! never caller input, so the number of series stays bounded.

mod provider;
mod text;
mod upstream;

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

pub use text::Format;
pub use upstream::UpstreamAttempt;

/// Every metric name starts with this (and `_`).
pub const PREFIX: &str = "condense";

/// Latency buckets, in seconds: a short `/v1/tokens` to a chunked LLM summary.
pub const LATENCY_BUCKETS: [f64; 17] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
    60.0, 120.0,
];

/// Problem type of a request shed under load (503).
pub const SHED: &str = "overloaded";
/// Problem type of a request that ran past the time limit (503).
pub const TIMED_OUT: &str = "timeout";
/// Problem type of a request over its key's rate (429).
pub const RATE_LIMITED: &str = "rate-limited";
/// Problem type of a request without valid credentials (401).
pub const UNAUTHORIZED: &str = "unauthorized";

/// A series' labels: each name with its value.
type Labels<const N: usize> = [(&'static str, Cow<'static, str>); N];
type Counters<const N: usize> = Family<Labels<N>, Counter>;
type Timings = Family<Labels<1>, Histogram, fn() -> Histogram>;

/// The families with their names and help, in order; `= init` if not `Default`.
macro_rules! families {
    ($($field:ident: $ty:ty $(= $init:expr)?, $name:literal, $help:literal;)+) => {
        struct Families {
            $($field: $ty,)+
        }

        impl Families {
            fn register(r: &mut Registry) -> Self {
                let f = Families { $($field: families!(@init $($init)?),)+ };
                $(r.register($name, $help, f.$field.clone());)+
                f
            }
        }
    };
    (@init) => { Default::default() };
    (@init $init:expr) => { $init };
}

families! {
    requests: Counters<2>, "http_requests",
        "Requests answered, by route template (`unmatched` when no route matched) and status";
    duration: Timings = Family::new_with_constructor(latency), "http_request_duration_seconds",
        "Time from the request to the response head, by route template";
    in_flight: Gauge, "http_requests_in_flight", "Requests received and not yet answered";
    problems: Counters<1>, "problems",
        "Problem answers (application/problem+json), by problem type";
    shed: Counters<1>, "shed_requests",
        "Requests refused under load (problem type overloaded, 503), by route template";
    timed_out: Counters<1>, "timed_out_requests",
        "Requests that ran past the request time limit (problem type timeout, 503), by route template";
    rate_limited: Counters<1>, "rate_limited_requests",
        "Requests over their rate limit (problem type rate-limited, 429), by route template";
    unauthorized: Counters<1>, "unauthorized_requests",
        "Requests refused for missing or wrong credentials (problem type unauthorized, 401), by route template";
    counted_tokens: Counters<2>, "counted_tokens",
        "Tokens counted for callers (the total_tokens of tokens and verdict answers, the tokens_before of compressions), by encoding and method (bpe or chars)";
    compressions: Counters<1>, "compressions",
        "Compressions run (API and proxy), by whether the thread was compressed";
    input_tokens: Counter, "compression_input_tokens",
        "Tokens of the threads given to compression";
    output_tokens: Counter, "compression_output_tokens",
        "Tokens of the threads compression returned";
    summaries: Counters<1>, "summaries_written",
        "Summaries written (not served from the cache), by the strategy that wrote them: heuristic, llm or hybrid";
    degraded: Counter, "summaries_degraded",
        "Summaries the heuristic wrote because the upstream LLM failed (also counted under heuristic in summaries_written)";
    cache_hits: Counters<2>, "cache_hits",
        "Summary cache lookups that found an entry, by backend and lookup (summary or prefix)";
    cache_misses: Counters<2>, "cache_misses",
        "Summary cache lookups that found nothing, by backend and lookup (summary or prefix)";
    cache_errors: Counters<2>, "cache_errors",
        "Summary cache calls that failed (the request went on uncached), by backend and operation";
    upstream_requests: Counters<1>, "upstream_requests",
        "HTTP requests to the summarizer LLM, retries included, and to providers' counting endpoints (kind count_*), by upstream kind";
    upstream_errors: Counters<2>, "upstream_errors",
        "Failed HTTP requests to the summarizer LLM or a counting endpoint, by upstream kind and error";
    upstream_duration: Timings = Family::new_with_constructor(latency), "upstream_request_duration_seconds",
        "Time of one HTTP request to the summarizer LLM or a counting endpoint, by upstream kind";
    provider_tokens: Counters<2>, "provider_tokens",
        "Tokens the provider billed for the proxy's answers, from its own usage, by provider and kind: input (at the full price), cache_read, cache_write, output";
    provider_dropped: Counters<2>, "provider_dropped_items",
        "Input items the provider said it dropped from proxied requests (input_transformations), by provider and reason (prefix_mismatch, or other)";
    upstream_tokens: Counters<2>, "upstream_tokens",
        "Tokens the summarizer LLM reported using, by upstream kind and type (prompt or completion)";
    proxied: Counters<2>, "proxy_forwarded_requests",
        "Requests the drop-in proxy forwarded, by provider and the provider's status";
    unchanged: Counters<2>, "proxy_unchanged_requests",
        "Requests the drop-in proxy forwarded unchanged because of a problem on its side, by provider and reason";
    tokens_removed: Counter, "compression_tokens_removed",
        "Tokens compressions took out of the threads they were given (tokens before minus after)";
    call_tokens: Counters<1>, "summary_call_tokens",
        "Prompt and completion tokens of the summarizer LLM's calls, by when they ran: on a request's path (request) or written ahead in the background (ahead)";
    sources: Counters<1>, "compression_summaries",
        "Compressed threads by the summary they carry: written on the request (written), found in the cache by its content (cached), written ahead and swapped in (precomputed), or the one earlier turns carried, its prefix reused byte for byte (continued)";
    jobs: Counters<1>, "precompute_jobs",
        "Background summaries (precompute): started, skipped (skipped_busy: every slot taken; skipped_memory: the memory budget), and how each ended (written, found: already stored, nothing: no span for the upstream, failed)";
    due: Counters<1>, "precompute_due_turns",
        "Turns on which a summary fell due with precompute on, by what happened: a summary written ahead was swapped in (used), it was not ready and the thread fit, so the request went on without it (pending), or the thread did not fit and the request waited for a summary (waited)";
}

fn latency() -> Histogram {
    Histogram::new(LATENCY_BUCKETS)
}

/// Adds `n` to the series of `labels` (fixed words) in `family`.
fn add<const N: usize>(family: &Counters<N>, labels: [(&'static str, &'static str); N], n: u64) {
    family
        .get_or_create(&labels.map(|(k, v)| (k, Cow::Borrowed(v))))
        .inc_by(n);
}

/// Which cache lookup: by content hash, or the longest summarized prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup {
    Summary,
    Prefix,
    /// A summary written ahead of its turn (precompute).
    Ahead,
}

/// The registry and the handles that record into it. Cheap to clone.
#[derive(Clone)]
pub struct Metrics(Arc<Inner>);

struct Inner {
    registry: Registry,
    f: Families,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}

/// A request in flight, until dropped (answered, or abandoned by its client).
pub struct InFlight(Gauge);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.dec();
    }
}

impl Metrics {
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix(PREFIX);
        let f = Families::register(&mut registry);
        Self(Arc::new(Inner { registry, f }))
    }

    /// The exposition of every metric, in `format`.
    pub fn render(&self, format: Format) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.0.registry);
        match format {
            Format::OpenMetrics => out,
            Format::Text => text::classic(&out),
        }
    }

    /// Counts a request in flight until the guard is dropped.
    pub fn request_started(&self) -> InFlight {
        let gauge = self.0.f.in_flight.clone();
        gauge.inc();
        InFlight(gauge)
    }

    /// One answered request: `route` is the matched template (never the path);
    /// the refusals are derived from `problem`, the answer's problem type.
    pub fn request_finished(
        &self,
        route: &str,
        status: u16,
        problem: Option<&'static str>,
        elapsed: Duration,
    ) {
        let f = &self.0.f;
        let route = ("route", Cow::Owned(route.to_owned()));
        let status = ("status", status_label(status));
        f.requests.get_or_create(&[route.clone(), status]).inc();
        let route = [route];
        f.duration
            .get_or_create(&route)
            .observe(elapsed.as_secs_f64());
        let Some(slug) = problem else { return };
        add(&f.problems, [("type", slug)], 1);
        let refused = match slug {
            SHED => &f.shed,
            TIMED_OUT => &f.timed_out,
            RATE_LIMITED => &f.rate_limited,
            UNAUTHORIZED => &f.unauthorized,
            _ => return,
        };
        refused.get_or_create(&route).inc();
    }

    /// Tokens of a thread or text counted for a caller.
    pub fn tokens_counted(&self, encoding: &'static str, method: &'static str, tokens: usize) {
        let labels = [("encoding", encoding), ("method", method)];
        add(&self.0.f.counted_tokens, labels, tokens as u64);
    }

    /// One finished compression and its token counts before and after.
    pub fn compression(&self, compressed: bool, before: usize, after: usize) {
        let f = &self.0.f;
        let compressed = if compressed { "true" } else { "false" };
        add(&f.compressions, [("compressed", compressed)], 1);
        f.input_tokens.inc_by(before as u64);
        f.output_tokens.inc_by(after as u64);
    }

    /// A summary written by `strategy` (`heuristic`, `llm`, `hybrid`).
    pub fn summary_written(&self, strategy: &'static str) {
        add(&self.0.f.summaries, [("strategy", strategy)], 1);
    }

    /// A heuristic summary standing in for an upstream that failed.
    pub fn summary_degraded(&self) {
        self.0.f.degraded.inc();
    }

    /// A cache lookup that found an entry (`hit`) or nothing.
    pub fn cache_lookup(&self, backend: &'static str, lookup: Lookup, hit: bool) {
        let f = &self.0.f;
        let lookup = match lookup {
            Lookup::Summary => "summary",
            Lookup::Prefix => "prefix",
            Lookup::Ahead => "precomputed",
        };
        let family = if hit { &f.cache_hits } else { &f.cache_misses };
        add(family, [("backend", backend), ("lookup", lookup)], 1);
    }

    /// A cache call that failed.
    pub fn cache_error(&self, backend: &'static str, operation: &'static str) {
        let labels = [("backend", backend), ("operation", operation)];
        add(&self.0.f.cache_errors, labels, 1);
    }

    /// A request the proxy forwarded, and the provider's status.
    pub fn proxy_forwarded(&self, provider: &'static str, status: u16) {
        let labels = [
            ("provider", provider.into()),
            ("status", status_label(status)),
        ];
        self.0.f.proxied.get_or_create(&labels).inc();
    }

    /// A request the proxy forwarded unchanged, and why (see `proxy::Unchanged`).
    pub fn proxy_unchanged(&self, provider: &'static str, reason: &'static str) {
        let labels = [("provider", provider), ("reason", reason)];
        add(&self.0.f.unchanged, labels, 1);
    }

    /// A compression that took `n` tokens out of its thread.
    pub fn tokens_removed(&self, n: usize) {
        self.0.f.tokens_removed.inc_by(n as u64);
    }

    /// Tokens of summarizer calls: `request` (on its path) or `ahead`.
    pub fn summary_call_tokens(&self, when: &'static str, n: u64) {
        add(&self.0.f.call_tokens, [("when", when)], n);
    }

    /// A compressed thread carrying a summary from `source`.
    pub fn summary_source(&self, source: &'static str) {
        add(&self.0.f.sources, [("source", source)], 1);
    }

    /// A background summary started, skipped, or ended so.
    pub fn precompute(&self, outcome: &'static str) {
        add(&self.0.f.jobs, [("outcome", outcome)], 1);
    }

    /// A due turn with precompute on, and what happened.
    pub fn precompute_due(&self, result: &'static str) {
        add(&self.0.f.due, [("result", result)], 1);
    }
}

/// A status code as a label: known ones as they are, others by class
/// (`4xx`), so a provider's odd codes cannot grow a series each.
fn status_label(status: u16) -> Cow<'static, str> {
    const KNOWN: [u16; 27] = [
        200, 201, 204, 206, 301, 302, 304, 307, 308, 400, 401, 403, 404, 405, 408, 409, 413, 415,
        422, 429, 499, 500, 501, 502, 503, 504, 529,
    ];
    match status {
        _ if KNOWN.contains(&status) => status.to_string().into(),
        100..=599 => format!("{}xx", status / 100).into(),
        _ => "other".into(),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn odd_statuses_are_labelled_by_class() {
        assert_eq!(status_label(429), "429");
        assert_eq!(status_label(529), "529");
        assert_eq!(status_label(418), "4xx");
        assert_eq!(status_label(599), "5xx");
        assert_eq!(status_label(999), "other");
        let m = Metrics::new();
        for status in 100..1000 {
            m.proxy_forwarded("openai", status);
        }
        let text = m.render(Format::Text);
        let series = text
            .lines()
            .filter(|l| l.starts_with("condense_proxy_forwarded_requests_total{"))
            .count();
        assert!(series <= 33, "{series} series:\n{text}");
    }

    /// Every family, once each has a series (an empty family is not written).
    #[test]
    fn every_family_is_written_with_its_type() {
        let m = Metrics::new();
        let took = Duration::from_millis(2);
        let _busy = m.request_started();
        for slug in [SHED, TIMED_OUT, RATE_LIMITED, UNAUTHORIZED] {
            m.request_finished("/v1/tokens", 503, Some(slug), took);
        }
        m.tokens_counted("o200k_base", "bpe", 10);
        m.compression(true, 10, 4);
        m.summary_written("llm");
        m.summary_degraded();
        m.cache_lookup("sqlite", Lookup::Summary, true);
        m.cache_lookup("postgres", Lookup::Prefix, false);
        m.cache_error("postgres", "get");
        m.upstream_attempt("openai").answered(100, 20);
        m.upstream_attempt("anthropic").failed("status_5xx");
        drop(m.upstream_attempt("openai"));
        m.proxy_forwarded("openai", 200);
        m.proxy_unchanged("anthropic", "unreadable");
        m.tokens_removed(6);
        m.summary_call_tokens("ahead", 120);
        m.summary_source("precomputed");
        m.precompute("written");
        m.precompute_due("used");

        let text = m.render(Format::Text);
        let declared: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("# TYPE condense_"))
            .collect();
        assert_eq!(
            declared,
            [
                "http_requests_total counter",
                "http_request_duration_seconds histogram",
                "http_requests_in_flight gauge",
                "problems_total counter",
                "shed_requests_total counter",
                "timed_out_requests_total counter",
                "rate_limited_requests_total counter",
                "unauthorized_requests_total counter",
                "counted_tokens_total counter",
                "compressions_total counter",
                "compression_input_tokens_total counter",
                "compression_output_tokens_total counter",
                "summaries_written_total counter",
                "summaries_degraded_total counter",
                "cache_hits_total counter",
                "cache_misses_total counter",
                "cache_errors_total counter",
                "upstream_requests_total counter",
                "upstream_errors_total counter",
                "upstream_request_duration_seconds histogram",
                "upstream_tokens_total counter",
                "proxy_forwarded_requests_total counter",
                "proxy_unchanged_requests_total counter",
                "compression_tokens_removed_total counter",
                "summary_call_tokens_total counter",
                "compression_summaries_total counter",
                "precompute_jobs_total counter",
                "precompute_due_turns_total counter",
            ]
        );
        for line in [
            "condense_upstream_requests_total{kind=\"openai\"} 2",
            "condense_upstream_errors_total{kind=\"openai\",error=\"abandoned\"} 1",
            "condense_upstream_errors_total{kind=\"anthropic\",error=\"status_5xx\"} 1",
            "condense_upstream_tokens_total{kind=\"openai\",type=\"prompt\"} 100",
            "condense_upstream_tokens_total{kind=\"openai\",type=\"completion\"} 20",
            "condense_upstream_request_duration_seconds_bucket{le=\"+Inf\",kind=\"openai\"} 2",
            "condense_http_request_duration_seconds_bucket{le=\"0.0005\",route=\"/v1/tokens\"} 0",
            "condense_http_request_duration_seconds_bucket{le=\"120.0\",route=\"/v1/tokens\"} 4",
            "condense_cache_misses_total{backend=\"postgres\",lookup=\"prefix\"} 1",
            "condense_proxy_forwarded_requests_total{provider=\"openai\",status=\"200\"} 1",
            "condense_proxy_unchanged_requests_total{provider=\"anthropic\",reason=\"unreadable\"} 1",
        ] {
            assert!(text.lines().any(|l| l == line), "no `{line}` in\n{text}");
        }
    }

    /// Two handles count apart: what lets each test own its numbers.
    #[test]
    fn registries_are_independent() {
        let (a, b) = (Metrics::new(), Metrics::new());
        a.summary_degraded();
        assert!(
            a.render(Format::Text)
                .contains("\ncondense_summaries_degraded_total 1\n")
        );
        assert!(
            b.render(Format::Text)
                .contains("\ncondense_summaries_degraded_total 0\n")
        );
    }

    #[test]
    fn refusals_are_derived_from_the_problem_type() {
        let m = Metrics::new();
        let took = Duration::from_millis(3);
        for (slug, status) in [
            (SHED, 503),
            (TIMED_OUT, 503),
            (RATE_LIMITED, 429),
            (UNAUTHORIZED, 401),
            ("validation", 422),
        ] {
            m.request_finished("/v1/compress", status, Some(slug), took);
        }
        m.request_finished("/v1/tokens", 200, None, took);
        let text = m.render(Format::Text);
        let has = |line: &str| assert!(text.lines().any(|l| l == line), "no `{line}` in\n{text}");
        for name in [
            "shed_requests",
            "timed_out_requests",
            "rate_limited_requests",
            "unauthorized_requests",
        ] {
            has(&format!(
                "condense_{name}_total{{route=\"/v1/compress\"}} 1"
            ));
            // One series each: neither the 422 nor the 200 counted as a refusal.
            let series = text
                .lines()
                .filter(|l| l.starts_with(&format!("condense_{name}_total{{")))
                .count();
            assert_eq!(series, 1, "{name}:\n{text}");
        }
        has("condense_problems_total{type=\"validation\"} 1");
        has("condense_problems_total{type=\"overloaded\"} 1");
        has("condense_http_requests_total{route=\"/v1/compress\",status=\"429\"} 1");
        has("condense_http_requests_total{route=\"/v1/compress\",status=\"503\"} 2");
        has("condense_http_request_duration_seconds_count{route=\"/v1/compress\"} 5");
        has("condense_http_requests_in_flight 0");
    }

    #[test]
    fn in_flight_lasts_as_long_as_the_guard() {
        let m = Metrics::new();
        let a = m.request_started();
        let b = m.request_started();
        drop(a);
        assert!(
            m.render(Format::Text)
                .contains("\ncondense_http_requests_in_flight 1\n")
        );
        drop(b);
        assert!(
            m.render(Format::Text)
                .contains("\ncondense_http_requests_in_flight 0\n")
        );
    }
}
