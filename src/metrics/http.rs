//! Request metrics: counted and timed by route and status, problems by
//! type, and the refusals an operator watches (shed, timed out, rate
//! limited, unauthorized), derived from the problem type so the code that
//! refuses needs no call of its own.

use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use super::Metrics;

/// Problem type of a request shed under load (503).
pub const SHED: &str = "overloaded";
/// Problem type of a request that ran past the time limit (503).
pub const TIMED_OUT: &str = "timeout";
/// Problem type of a request over its key's rate (429).
pub const RATE_LIMITED: &str = "rate-limited";
/// Problem type of a request without valid credentials (401).
pub const UNAUTHORIZED: &str = "unauthorized";

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteStatus {
    route: String,
    status: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Route {
    route: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Problem {
    r#type: &'static str,
}

pub(super) struct Http {
    requests: Family<RouteStatus, Counter>,
    duration: Family<Route, Histogram, fn() -> Histogram>,
    in_flight: Gauge,
    problems: Family<Problem, Counter>,
    shed: Family<Route, Counter>,
    timed_out: Family<Route, Counter>,
    rate_limited: Family<Route, Counter>,
    unauthorized: Family<Route, Counter>,
}

impl Http {
    pub(super) fn register(r: &mut Registry) -> Self {
        let m = Self {
            requests: Family::default(),
            duration: Family::new_with_constructor(super::latency_histogram),
            in_flight: Gauge::default(),
            problems: Family::default(),
            shed: Family::default(),
            timed_out: Family::default(),
            rate_limited: Family::default(),
            unauthorized: Family::default(),
        };
        r.register(
            "http_requests",
            "Requests answered, by route template (`unmatched` when no route matched) and status",
            m.requests.clone(),
        );
        r.register(
            "http_request_duration_seconds",
            "Time from the request to the response head, by route template",
            m.duration.clone(),
        );
        r.register(
            "http_requests_in_flight",
            "Requests received and not yet answered",
            m.in_flight.clone(),
        );
        r.register(
            "problems",
            "Problem answers (application/problem+json), by problem type",
            m.problems.clone(),
        );
        r.register(
            "shed_requests",
            "Requests refused under load (problem type overloaded, 503), by route template",
            m.shed.clone(),
        );
        r.register(
            "timed_out_requests",
            "Requests that ran past the request time limit (problem type timeout, 503), by route template",
            m.timed_out.clone(),
        );
        r.register(
            "rate_limited_requests",
            "Requests over their rate limit (problem type rate-limited, 429), by route template",
            m.rate_limited.clone(),
        );
        r.register(
            "unauthorized_requests",
            "Requests refused for missing or wrong credentials (problem type unauthorized, 401), by route template",
            m.unauthorized.clone(),
        );
        m
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
    /// Counts a request in flight until the guard is dropped.
    pub fn request_started(&self) -> InFlight {
        let gauge = self.0.http.in_flight.clone();
        gauge.inc();
        InFlight(gauge)
    }

    /// One answered request. `route` is the matched route template (never
    /// the request's path); `problem` is the answer's problem type, if it is one.
    pub fn request_finished(
        &self,
        route: &str,
        status: u16,
        problem: Option<&'static str>,
        elapsed: Duration,
    ) {
        let m = &self.0.http;
        let route = Route {
            route: route.to_owned(),
        };
        m.requests
            .get_or_create(&RouteStatus {
                route: route.route.clone(),
                status: super::status_label(status),
            })
            .inc();
        m.duration
            .get_or_create(&route)
            .observe(elapsed.as_secs_f64());
        let Some(slug) = problem else { return };
        m.problems.get_or_create(&Problem { r#type: slug }).inc();
        let refused = match slug {
            SHED => &m.shed,
            TIMED_OUT => &m.timed_out,
            RATE_LIMITED => &m.rate_limited,
            UNAUTHORIZED => &m.unauthorized,
            _ => return,
        };
        refused.get_or_create(&route).inc();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Format;

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
