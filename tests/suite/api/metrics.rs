//! `GET /metrics`: scraped through the router and read with a strict parser
//! of the text format. Each test builds its own app, and each app has its
//! own registry, so the numbers are exact whatever else runs in this binary;
//! they are still read as differences between two scrapes, as a dashboard
//! reads them.

use axum::Router;
use axum::body::Body;
use axum::http::{Request, header};
use serde_json::{Value, json};

use crate::support::common::{Reply, app, app_with, get, post, post_raw, send, thread};
use crate::support::prometheus::{Scrape, parse};
use crate::support::stub::{self, Fault};

/// Every metric family `/metrics` declares, with its type.
const FAMILIES: [(&str, &str); 28] = [
    ("condense_http_requests_total", "counter"),
    ("condense_http_request_duration_seconds", "histogram"),
    ("condense_http_requests_in_flight", "gauge"),
    ("condense_problems_total", "counter"),
    ("condense_shed_requests_total", "counter"),
    ("condense_timed_out_requests_total", "counter"),
    ("condense_rate_limited_requests_total", "counter"),
    ("condense_unauthorized_requests_total", "counter"),
    ("condense_counted_tokens_total", "counter"),
    ("condense_compressions_total", "counter"),
    ("condense_compression_input_tokens_total", "counter"),
    ("condense_compression_output_tokens_total", "counter"),
    ("condense_summaries_written_total", "counter"),
    ("condense_summaries_degraded_total", "counter"),
    ("condense_cache_hits_total", "counter"),
    ("condense_cache_misses_total", "counter"),
    ("condense_cache_errors_total", "counter"),
    ("condense_upstream_requests_total", "counter"),
    ("condense_upstream_errors_total", "counter"),
    ("condense_upstream_request_duration_seconds", "histogram"),
    ("condense_upstream_tokens_total", "counter"),
    ("condense_proxy_forwarded_requests_total", "counter"),
    ("condense_proxy_unchanged_requests_total", "counter"),
    ("condense_compression_tokens_removed_total", "counter"),
    ("condense_summary_call_tokens_total", "counter"),
    ("condense_compression_summaries_total", "counter"),
    ("condense_precompute_jobs_total", "counter"),
    ("condense_precompute_due_turns_total", "counter"),
];

async fn scrape(app: &Router) -> Scrape {
    let r = get(app, "/metrics").await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.content_type(), "text/plain; version=0.0.4; charset=utf-8");
    parse(&r.text())
}

/// What changed between two scrapes of one series (absent counts as 0).
fn delta(before: &Scrape, after: &Scrape, name: &str, labels: &[(&str, &str)]) -> f64 {
    let family = ["_bucket", "_sum", "_count"]
        .iter()
        .find_map(|s| name.strip_suffix(s))
        .unwrap_or(name);
    assert!(
        FAMILIES.iter().any(|(f, _)| *f == family),
        "{name} is not a metric of condense"
    );
    after.value(name, labels) - before.value(name, labels)
}

fn number(v: &Value) -> f64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}")) as f64
}

/// A heuristic summary is due: small-00 forced, its summary written here.
fn heuristic_compression() -> Value {
    let t = thread("small-00.openai");
    json!({"messages": t["messages"], "tools": t["tools"], "model": "gpt-4o", "force": true,
           "summarizer": {"strategy": "heuristic"}})
}

fn ok(r: Reply) -> Value {
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()
}

#[tokio::test]
async fn the_exposition_declares_only_condense_families() {
    let app = app();
    // One request of each kind first: a family shows once it has a series.
    ok(post(&app, "/v1/compress", &heuristic_compression()).await);
    get(&app, "/nope").await.problem(404);
    let text = get(&app, "/metrics").await.text();
    let s = parse(&text);
    for (name, f) in &s.families {
        assert!(
            FAMILIES.contains(&(name.as_str(), f.kind.as_str())),
            "{name} ({}) is not in the list\n{text}",
            f.kind
        );
        assert!(!f.help.trim().is_empty(), "{name} has no help");
    }
    for (name, _) in [
        FAMILIES[0],
        FAMILIES[1],
        FAMILIES[2],
        FAMILIES[3],
        FAMILIES[8],
        FAMILIES[9],
        FAMILIES[10],
        FAMILIES[11],
        FAMILIES[12],
    ] {
        assert!(s.families.contains_key(name), "{name} missing\n{text}");
    }
    assert!(
        !text.contains("# EOF"),
        "OpenMetrics' EOF in the text format"
    );
    // The scrape is itself in flight while it renders.
    assert_eq!(s.value("condense_http_requests_in_flight", &[]), 1.0);
}

#[tokio::test]
async fn prometheus_gets_openmetrics_when_it_asks() {
    let app = app();
    let req = Request::get("/metrics")
        .header(
            header::ACCEPT,
            "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5,*/*;q=0.1",
        )
        .body(Body::empty())
        .unwrap();
    let r = send(&app, req).await;
    assert_eq!(r.status, 200);
    assert_eq!(
        r.content_type(),
        "application/openmetrics-text; version=1.0.0; charset=utf-8"
    );
    let text = r.text();
    assert!(text.ends_with("# EOF\n"), "{text}");
    // OpenMetrics names a counter family without `_total`; its samples have it.
    assert!(
        text.contains(
            "# TYPE condense_compression_input_tokens counter\n\
             condense_compression_input_tokens_total 0\n"
        ),
        "{text}"
    );
}

#[tokio::test]
async fn a_heuristic_compression_is_counted_with_its_token_numbers() {
    let app = app();
    let before = scrape(&app).await;
    let out = ok(post(&app, "/v1/compress", &heuristic_compression()).await);
    let after = scrape(&app).await;
    let d = |name: &str, labels: &[(&str, &str)]| delta(&before, &after, name, labels);

    assert_eq!(out["compressed"], true);
    assert_eq!(out["summary"]["strategy"], "heuristic");
    let (tokens_before, tokens_after) =
        (number(&out["tokens_before"]), number(&out["tokens_after"]));
    assert!(tokens_before > tokens_after, "{out}");

    let route = [("route", "/v1/compress"), ("status", "200")];
    assert_eq!(d("condense_http_requests_total", &route), 1.0);
    assert_eq!(
        d(
            "condense_http_request_duration_seconds_count",
            &[("route", "/v1/compress")]
        ),
        1.0
    );
    assert_eq!(
        d(
            "condense_summaries_written_total",
            &[("strategy", "heuristic")]
        ),
        1.0
    );
    assert_eq!(d("condense_summaries_degraded_total", &[]), 0.0);
    assert_eq!(
        d("condense_compressions_total", &[("compressed", "true")]),
        1.0
    );
    assert_eq!(
        d("condense_compression_input_tokens_total", &[]),
        tokens_before
    );
    assert_eq!(
        d("condense_compression_output_tokens_total", &[]),
        tokens_after
    );
    assert_eq!(
        d(
            "condense_counted_tokens_total",
            &[("encoding", "o200k_base"), ("method", "bpe")]
        ),
        tokens_before
    );
    // No cache in this app: no lookups counted, under any backend.
    assert_eq!(
        after.matching("condense_cache_misses_total", &[]).count(),
        0
    );
    // No upstream: no upstream series at all.
    assert_eq!(
        after
            .matching("condense_upstream_requests_total", &[])
            .count(),
        0
    );
}

#[tokio::test]
async fn counted_tokens_are_labelled_by_encoding_and_method() {
    let app = app();
    let before = scrape(&app).await;
    let bpe = ok(post(
        &app,
        "/v1/tokens",
        &json!({"text": "count me, please", "encoding": "cl100k_base"}),
    )
    .await);
    let chars = ok(post(
        &app,
        "/v1/tokens",
        &json!({"messages": crate::support::common::chat(6), "method": "chars"}),
    )
    .await);
    let verdict = ok(post(
        &app,
        "/v1/verdict",
        &json!({"messages": crate::support::common::chat(4)}),
    )
    .await);
    let after = scrape(&app).await;
    let d =
        |labels: &[(&str, &str)]| delta(&before, &after, "condense_counted_tokens_total", labels);

    assert_eq!(
        d(&[("encoding", "cl100k_base"), ("method", "bpe")]),
        number(&bpe["total_tokens"])
    );
    assert_eq!(
        d(&[("encoding", "o200k_base"), ("method", "chars")]),
        number(&chars["total_tokens"])
    );
    assert_eq!(
        d(&[("encoding", "o200k_base"), ("method", "bpe")]),
        number(&verdict["total_tokens"])
    );
    for route in ["/v1/tokens", "/v1/verdict"] {
        let n = after.value(
            "condense_http_requests_total",
            &[("route", route), ("status", "200")],
        );
        assert_eq!(n, if route == "/v1/tokens" { 2.0 } else { 1.0 }, "{route}");
    }
}

#[tokio::test]
async fn unmatched_paths_share_one_label_and_never_appear() {
    let app = app();
    let before = scrape(&app).await;
    for path in ["/nope", "/v1/tokens/extra", "/secret-looking/path?x=1"] {
        get(&app, path).await.problem(404);
    }
    let after = scrape(&app).await;
    let unmatched = [("route", "unmatched"), ("status", "404")];
    assert_eq!(
        delta(&before, &after, "condense_http_requests_total", &unmatched),
        3.0
    );
    assert_eq!(
        delta(
            &before,
            &after,
            "condense_problems_total",
            &[("type", "not-found")]
        ),
        3.0
    );
    for s in &after.samples {
        for v in s.labels.values() {
            assert!(!v.contains("nope") && !v.contains("secret"), "{s:?}");
        }
    }
}

#[tokio::test]
async fn an_oversized_body_is_counted_as_a_payload_too_large_problem() {
    let app = app_with(condense::Config {
        limits: condense::config::LimitSettings {
            body_limit: 1024,
            ..Default::default()
        },
        ..Default::default()
    });
    let before = scrape(&app).await;
    let body = json!({"text": "x".repeat(4096)}).to_string();
    post_raw(&app, "/v1/tokens", "application/json", body)
        .await
        .problem(413);
    let after = scrape(&app).await;
    assert_eq!(
        delta(
            &before,
            &after,
            "condense_problems_total",
            &[("type", "payload-too-large")]
        ),
        1.0
    );
    assert_eq!(
        delta(
            &before,
            &after,
            "condense_http_requests_total",
            &[("route", "/v1/tokens"), ("status", "413")]
        ),
        1.0
    );
    // Only the refusals an operator is paged for have their own counters.
    for name in ["shed", "timed_out", "rate_limited", "unauthorized"] {
        let name = format!("condense_{name}_requests_total");
        assert_eq!(after.matching(&name, &[]).count(), 0, "{name}");
    }
}

#[tokio::test]
async fn the_second_identical_compression_is_a_cache_hit() {
    for (url, _db) in
        super::cache_e2e::every_backend("the_second_identical_compression_is_a_cache_hit").await
    {
        let backend = if url.starts_with("sqlite") {
            "sqlite"
        } else {
            "postgres"
        };
        let app = super::cache_e2e::app_on(&url, None).await;
        let summary = [("backend", backend), ("lookup", "summary")];
        let s0 = scrape(&app).await;
        let first = ok(post(&app, "/v1/compress", &heuristic_compression()).await);
        let s1 = scrape(&app).await;
        let second = ok(post(&app, "/v1/compress", &heuristic_compression()).await);
        let s2 = scrape(&app).await;

        assert_eq!(first["summary"]["cached"], false, "{backend}");
        assert_eq!(second["summary"]["cached"], true, "{backend}");
        assert_eq!(
            delta(&s0, &s1, "condense_cache_misses_total", &summary),
            1.0,
            "{backend}"
        );
        assert_eq!(
            delta(&s0, &s1, "condense_cache_hits_total", &summary),
            0.0,
            "{backend}"
        );
        assert_eq!(
            delta(&s1, &s2, "condense_cache_hits_total", &summary),
            1.0,
            "{backend}"
        );
        assert_eq!(
            delta(&s1, &s2, "condense_cache_misses_total", &summary),
            0.0,
            "{backend}"
        );
        let written = [("strategy", "heuristic")];
        assert_eq!(
            delta(&s0, &s1, "condense_summaries_written_total", &written),
            1.0
        );
        assert_eq!(
            delta(&s1, &s2, "condense_summaries_written_total", &written),
            0.0
        );
        assert_eq!(
            s2.matching("condense_cache_errors_total", &[]).count(),
            0,
            "{backend}"
        );
    }
}

#[tokio::test]
async fn an_upstream_that_refuses_is_counted_and_degrades_the_summary() {
    let s = stub::start(Fault::BadRequest, false).await;
    let app = app_with(condense::Config {
        upstream: condense::config::UpstreamSettings {
            url: Some(s.url.clone()),
            model: "stub-model".into(),
            timeout: std::time::Duration::from_secs(60),
            retry_budget: std::time::Duration::from_secs(120),
            ..Default::default()
        },
        ..Default::default()
    });
    let t = thread("small-00.openai");
    let body = json!({"messages": t["messages"], "model": "gpt-4o", "force": true,
                      "summarizer": {"strategy": "llm"}});
    let before = scrape(&app).await;
    let out = ok(post(&app, "/v1/compress", &body).await);
    let after = scrape(&app).await;
    let d = |name: &str, labels: &[(&str, &str)]| delta(&before, &after, name, labels);

    assert_eq!(out["degraded"], true, "{out}");
    let calls = s.calls() as f64;
    // A 400 is not retried.
    assert_eq!(calls, 1.0);
    let openai = [("kind", "openai")];
    assert_eq!(d("condense_upstream_requests_total", &openai), calls);
    assert_eq!(
        d(
            "condense_upstream_errors_total",
            &[("kind", "openai"), ("error", "status_4xx")]
        ),
        calls
    );
    assert_eq!(
        d("condense_upstream_request_duration_seconds_count", &openai),
        calls
    );
    assert_eq!(
        after
            .matching("condense_upstream_tokens_total", &[])
            .count(),
        0
    );
    assert_eq!(d("condense_summaries_degraded_total", &[]), 1.0);
    assert_eq!(
        d(
            "condense_summaries_written_total",
            &[("strategy", "heuristic")]
        ),
        1.0
    );
    assert_eq!(
        d("condense_summaries_written_total", &[("strategy", "llm")]),
        0.0
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_model_call_is_counted_with_its_token_usage() {
    let Some(url) = crate::support::live::llm("a_real_model_call_is_counted_with_its_token_usage")
    else {
        return;
    };
    let app = crate::support::common::app_with_local_llm(url);
    // A short thread: one small call, so the shared model answers soon.
    let body = json!({"messages": crate::support::common::chat(14), "model": "gpt-4o", "force": true,
                      "summarizer": {"strategy": "llm"}, "config": {"max_summary_tokens": 200}});
    let before = scrape(&app).await;
    let out = ok(post(&app, "/v1/compress", &body).await);
    let after = scrape(&app).await;
    let d = |name: &str, labels: &[(&str, &str)]| delta(&before, &after, name, labels);

    assert_eq!(
        out["degraded"], false,
        "the model answered: {}",
        out["warnings"]
    );
    let usage = &out["usage"];
    let calls = number(&usage["calls"]);
    assert!(calls >= 1.0, "{usage}");
    let openai = [("kind", "openai")];
    assert_eq!(d("condense_upstream_requests_total", &openai), calls);
    assert_eq!(
        d("condense_upstream_request_duration_seconds_count", &openai),
        calls
    );
    // A busy shared model may time out once and answer the retry: every
    // attempt is a request, the failed ones errors, and the last one answered.
    let failed: f64 = after
        .matching("condense_upstream_errors_total", &openai)
        .map(|s| s.value)
        .sum();
    assert!(failed < calls, "{failed} of {calls} attempts failed");
    for (kind, field) in [
        ("prompt", "prompt_tokens"),
        ("completion", "completion_tokens"),
    ] {
        assert_eq!(
            d(
                "condense_upstream_tokens_total",
                &[("kind", "openai"), ("type", kind)]
            ),
            number(&usage[field]),
            "{kind}: {usage}"
        );
    }
    assert_eq!(
        d("condense_summaries_written_total", &[("strategy", "llm")]),
        1.0
    );
}

#[tokio::test]
async fn a_database_that_is_down_is_counted_as_a_cache_error() {
    // A port with nothing behind it: every connection is refused, and the
    // pool gives up at its acquire timeout (which must fire, and does).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let config = condense::Config {
        cache: condense::config::CacheSettings {
            database_url: Some(format!("postgres://condense@127.0.0.1:{port}/condense")),
            db_acquire_timeout: std::time::Duration::from_millis(1_000),
            ..Default::default()
        },
        ..Default::default()
    };
    let app = condense::http::router(condense::AppState::connect(config).await.unwrap());
    let before = scrape(&app).await;
    let out = ok(post(&app, "/v1/compress", &heuristic_compression()).await);
    let after = scrape(&app).await;

    assert_eq!(out["summary"]["cached"], false);
    let get = [("backend", "postgres"), ("operation", "get")];
    assert_eq!(
        delta(&before, &after, "condense_cache_errors_total", &get),
        1.0
    );
    // The failed lookup is an error, not a miss; the summary was still written.
    assert_eq!(
        after.matching("condense_cache_misses_total", &[]).count(),
        0
    );
    assert_eq!(
        delta(
            &before,
            &after,
            "condense_summaries_written_total",
            &[("strategy", "heuristic")]
        ),
        1.0
    );
}
