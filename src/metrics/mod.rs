//! Prometheus metrics: what `GET /metrics` exposes.
//!
//! One registry per [`Metrics`], held by the application state, not a
//! process-wide recorder: two routers in one process (the tests build dozens)
//! count apart, so a test can assert exact numbers. The domain records at
//! the point where it already knows a number (the compressor its token
//! counts, the summary service its cache lookups, the upstream client each
//! call), through the handle it was given; nothing else calls in here.
//!
//! This module is the lowest layer: it imports nothing of the crate, so every
//! layer may record. Label values are never caller input: routes are the
//! matched route templates, everything else a fixed word (`&'static str`) or
//! a status number, so the number of series stays bounded.
//!
//! `prometheus-client` (3 crates, no HTTP listener) renders OpenMetrics;
//! [`Format::Text`] is the same exposition in the classic Prometheus text
//! format, for scrapers and people that do not ask for OpenMetrics.

mod domain;
mod http;
mod summaries;
mod text;
mod upstream;

use std::sync::Arc;

use prometheus_client::registry::Registry;

pub use domain::Lookup;
pub use http::{InFlight, RATE_LIMITED, SHED, TIMED_OUT, UNAUTHORIZED};
pub use text::Format;
pub use upstream::UpstreamAttempt;

/// Every metric name starts with this (and `_`).
pub const PREFIX: &str = "condense";

/// Bucket bounds of the latency histograms, in seconds: from half a
/// millisecond (a short `/v1/tokens`) to two minutes (a chunked LLM summary).
pub const LATENCY_BUCKETS: [f64; 17] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
    60.0, 120.0,
];

/// The registry and the handles that record into it. Cheap to clone.
#[derive(Clone)]
pub struct Metrics(Arc<Inner>);

struct Inner {
    registry: Registry,
    http: http::Http,
    domain: domain::Domain,
    summaries: summaries::Summaries,
}

impl Default for Metrics {
    /// A registry of its own, that nobody reads unless it is rendered: what
    /// a part built without the application's handle records into.
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}

impl Metrics {
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix(PREFIX);
        let http = http::Http::register(&mut registry);
        let domain = domain::Domain::register(&mut registry);
        let summaries = summaries::Summaries::register(&mut registry);
        Self(Arc::new(Inner {
            registry,
            http,
            domain,
            summaries,
        }))
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
}

/// A status code as a label: the ones condense and the providers answer
/// with by design as they are, any other by its class (`4xx`), so a
/// provider that sends odd codes cannot grow a series per code.
fn status_label(status: u16) -> &'static str {
    const KNOWN: [(u16, &str); 27] = [
        (200, "200"),
        (201, "201"),
        (204, "204"),
        (206, "206"),
        (301, "301"),
        (302, "302"),
        (304, "304"),
        (307, "307"),
        (308, "308"),
        (400, "400"),
        (401, "401"),
        (403, "403"),
        (404, "404"),
        (405, "405"),
        (408, "408"),
        (409, "409"),
        (413, "413"),
        (415, "415"),
        (422, "422"),
        (429, "429"),
        (500, "500"),
        (501, "501"),
        (502, "502"),
        (503, "503"),
        (504, "504"),
        (529, "529"),
        (499, "499"),
    ];
    if let Some((_, label)) = KNOWN.iter().find(|(code, _)| *code == status) {
        return label;
    }
    match status {
        100..=199 => "1xx",
        200..=299 => "2xx",
        300..=399 => "3xx",
        400..=499 => "4xx",
        500..=599 => "5xx",
        _ => "other",
    }
}

fn latency_histogram() -> prometheus_client::metrics::histogram::Histogram {
    prometheus_client::metrics::histogram::Histogram::new(LATENCY_BUCKETS)
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
}
