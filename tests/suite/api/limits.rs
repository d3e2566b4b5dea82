//! Limits through the router: the rate limit's buckets and headers, the
//! thread limits on every entry point, `Retry-After` on a timeout, CORS.
//! (Shedding under real concurrency is in `tests/suite/edge.rs`, over sockets.)

use axum::body::Body;
use axum::http::{Request, header};
use serde_json::{Value, json};

use axum::Router;
use condense::http::Access;

use super::access::every_route;
use crate::support::common::{Reply, app, app_with, chat, get, post, send, thread};
use crate::support::stub::{self, Fault};

const KEY_A: &str = "rate-key-a-0123456789abcdef";
const KEY_B: &str = "rate-key-b-0123456789abcdef";

fn post_as(key: &str, path: &str, body: &Value) -> Request<Body> {
    Request::post(path)
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::AUTHORIZATION, format!("Bearer {key}"))
        .body(Body::from(serde_json::to_vec(body).unwrap()))
        .unwrap()
}

fn number(r: &Reply, name: &str) -> u64 {
    r.headers
        .get(name)
        .unwrap_or_else(|| panic!("no {name} in {:?}", r.headers))
        .to_str()
        .unwrap()
        .parse()
        .unwrap()
}

/// A rate so slow that no token comes back while a test runs: what is
/// allowed is exactly the burst.
fn rate_limited(keys: bool) -> condense::Config {
    condense::Config {
        access: condense::config::AccessSettings {
            rate_limit_per_sec: 0.001,
            rate_limit_burst: 2,
            api_keys: if keys {
                vec![
                    condense::upstream::Secret::new(KEY_A),
                    condense::upstream::Secret::new(KEY_B),
                ]
            } else {
                Vec::new()
            },
            ..Default::default()
        },
        ..Default::default()
    }
}

#[tokio::test]
async fn each_key_has_its_own_bucket_and_the_answers_say_so() {
    let app = app_with(rate_limited(true));
    let text = json!({"text": "hello"});
    let first = send(&app, post_as(KEY_A, "/v1/tokens", &text)).await;
    assert_eq!(first.status, 200);
    assert_eq!(number(&first, "ratelimit-limit"), 2);
    assert_eq!(number(&first, "ratelimit-remaining"), 1);
    let second = send(&app, post_as(KEY_A, "/v1/tokens", &text)).await;
    assert_eq!(number(&second, "ratelimit-remaining"), 0);
    // 2 tokens missing at 0.001 a second.
    assert_eq!(number(&second, "ratelimit-reset"), 2000);

    let refused = send(&app, post_as(KEY_A, "/v1/tokens", &text)).await;
    let p = refused.problem(429);
    assert_eq!(p["type"], "urn:condense:problem:rate-limited");
    assert!(p["detail"].as_str().unwrap().contains("API key"), "{p}");
    assert_eq!(number(&refused, "retry-after"), 1000);
    assert_eq!(number(&refused, "ratelimit-remaining"), 0);
    assert_eq!(number(&refused, "ratelimit-limit"), 2);

    // Another key is not affected, nor are the probes.
    assert_eq!(
        send(&app, post_as(KEY_B, "/v1/tokens", &text)).await.status,
        200
    );
    for _ in 0..5 {
        let r = send(&app, Request::get("/healthz").body(Body::empty()).unwrap()).await;
        assert_eq!(r.status, 200);
        assert!(r.headers.get("ratelimit-limit").is_none());
    }
    // A refused key stays refused on every route.
    let r = send(
        &app,
        post_as(KEY_A, "/v1/verdict", &json!({"messages": chat(2)})),
    )
    .await;
    r.problem(429);
}

#[tokio::test]
async fn without_keys_the_limit_applies_per_client() {
    // In-process there is no client address: all requests share one bucket.
    let app = app_with(rate_limited(false));
    let text = json!({"text": "hello"});
    for _ in 0..2 {
        assert_eq!(post(&app, "/v1/tokens", &text).await.status, 200);
    }
    let p = post(&app, "/v1/tokens", &text).await.problem(429);
    assert!(
        p["detail"].as_str().unwrap().contains("client address"),
        "{p}"
    );
    // Without a limit configured, no headers.
    let r = post(&crate::support::common::app(), "/v1/tokens", &text).await;
    assert!(r.headers.get("ratelimit-limit").is_none());
}

fn tight() -> condense::Config {
    condense::Config {
        limits: condense::config::LimitSettings {
            max_messages: 3,
            max_total_chars: 100,
            ..Default::default()
        },
        ..Default::default()
    }
}

fn assert_too_large(r: &Reply, field: &str, limit: &str) {
    let p = r.problem(413);
    assert_eq!(p["type"], "urn:condense:problem:payload-too-large");
    let detail = p["detail"].as_str().unwrap();
    assert!(detail.starts_with(field), "{detail}");
    assert!(detail.contains(limit), "{detail}");
}

#[tokio::test]
async fn threads_over_the_limits_are_413_naming_the_field_and_the_limit() {
    let app = app_with(tight());
    let four = json!({"messages": chat(4)});
    let long = json!({"messages": [{"role": "user", "content": "x".repeat(101)}]});
    for path in ["/v1/tokens", "/v1/verdict", "/v1/compress"] {
        assert_too_large(
            &post(&app, path, &four).await,
            "/messages holds 4 messages",
            "limit is 3 (CONDENSE_MAX_MESSAGES)",
        );
        assert_too_large(
            &post(&app, path, &long).await,
            "/messages holds 101 characters",
            "limit is 100 (CONDENSE_MAX_TOTAL_CHARS)",
        );
        assert_eq!(
            post(&app, path, &json!({"messages": chat(3)})).await.status,
            200
        );
    }
    // Characters, not bytes, and every text the tokenizer reads: the system prompt too.
    let anthropic = json!({"system": "s".repeat(60), "messages": [{"role": "user", "content": "é".repeat(41)}]});
    assert_too_large(
        &post(&app, "/v1/tokens", &anthropic).await,
        "/messages holds 101 characters",
        "100",
    );
    let fits = json!({"system": "s".repeat(59), "messages": [{"role": "user", "content": "é".repeat(41)}]});
    assert_eq!(post(&app, "/v1/tokens", &fits).await.status, 200);
    assert_too_large(
        &post(&app, "/v1/tokens", &json!({"text": "x".repeat(101)})).await,
        "/text holds 101 characters",
        "100",
    );
    // 0 lifts a limit.
    let unlimited = app_with(condense::Config {
        limits: condense::config::LimitSettings {
            max_messages: 0,
            max_total_chars: 0,
            ..Default::default()
        },
        ..Default::default()
    });
    let big = json!({"messages": chat(20_000)});
    assert_eq!(post(&unlimited, "/v1/tokens", &big).await.status, 200);
    assert_too_large(
        &post(&app_with(Default::default()), "/v1/tokens", &big).await,
        "/messages holds 20000 messages",
        "10000",
    );
}

#[tokio::test]
async fn the_proxy_refuses_threads_over_the_limits_before_the_provider_sees_them() {
    let s = stub::start(Fault::Ok, false).await;
    let app = app_with({
        let mut config = tight();
        config.proxy.openai_url = Some(s.url.clone());
        config
    });
    let r = post(
        &app,
        "/v1/chat/completions",
        &json!({"model": "gpt-4o", "messages": chat(4)}),
    )
    .await;
    assert_too_large(&r, "/messages holds 4 messages", "3");
    let long =
        json!({"model": "gpt-4o", "messages": [{"role": "user", "content": "x".repeat(101)}]});
    assert_too_large(
        &post(&app, "/v1/chat/completions", &long).await,
        "/messages",
        "100",
    );
    assert_eq!(s.calls(), 0);
    let ok = post(
        &app,
        "/v1/chat/completions",
        &json!({"model": "gpt-4o", "messages": chat(3)}),
    )
    .await;
    assert_eq!(ok.status, 200, "{}", ok.text());
    assert_eq!(s.calls(), 1);
}

#[tokio::test]
async fn a_timeout_says_when_to_come_back() {
    // A zero time limit lets only handlers that never wait finish in time.
    let app = app_with(condense::Config {
        limits: condense::config::LimitSettings {
            request_timeout: std::time::Duration::from_secs(0),
            ..Default::default()
        },
        ..Default::default()
    });
    for path in ["/v1/tokens", "/v1/verdict"] {
        let r = post(&app, path, &thread("large-04.openai")).await;
        let p = r.problem(503);
        assert_eq!(p["type"], "urn:condense:problem:timeout", "{path}");
        assert_eq!(number(&r, "retry-after"), 5);
    }
}

fn preflight(origin: &str) -> Request<Body> {
    Request::options("/v1/tokens")
        .header(header::ORIGIN, origin)
        .header(header::ACCESS_CONTROL_REQUEST_METHOD, "POST")
        .header(
            header::ACCESS_CONTROL_REQUEST_HEADERS,
            "authorization, content-type",
        )
        .body(Body::empty())
        .unwrap()
}

fn from(origin: &str, req: Request<Body>) -> Request<Body> {
    let (mut parts, body) = req.into_parts();
    parts
        .headers
        .insert(header::ORIGIN, origin.parse().unwrap());
    Request::from_parts(parts, body)
}

#[tokio::test]
async fn cors_is_off_by_default_and_exact_when_configured() {
    const SITE: &str = "https://agents.example.com";
    // Off: a page elsewhere gets no CORS headers, and its request is
    // refused outright (a simple request would otherwise run unread).
    let r = send(
        &app(),
        from(SITE, post_as(KEY_A, "/v1/tokens", &json!({"text": "a"}))),
    )
    .await;
    r.problem(403);
    assert!(r.headers.get(header::ACCESS_CONTROL_ALLOW_ORIGIN).is_none());
    if let Some(vary) = r.headers.get(header::VARY) {
        assert!(!vary.to_str().unwrap().contains("origin"), "{vary:?}");
    }
    let r = send(&app(), preflight(SITE)).await;
    assert!(r.headers.get(header::ACCESS_CONTROL_ALLOW_ORIGIN).is_none());
    assert_eq!(r.status, 403);

    let app = app_with(condense::Config {
        access: condense::config::AccessSettings {
            cors_origins: vec![SITE.into(), "http://localhost:3000".into()],
            api_keys: vec![condense::upstream::Secret::new(KEY_A)],
            ..Default::default()
        },
        ..Default::default()
    });
    // The preflight carries no key and is answered all the same.
    let r = send(&app, preflight(SITE)).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.headers[header::ACCESS_CONTROL_ALLOW_ORIGIN], SITE);
    let allowed = r.headers[header::ACCESS_CONTROL_ALLOW_HEADERS]
        .to_str()
        .unwrap()
        .to_string();
    assert!(allowed.contains("authorization"), "{allowed}");
    // A page can read a refusal, and why.
    let r = send(
        &app,
        from(
            SITE,
            Request::post("/v1/tokens").body(Body::empty()).unwrap(),
        ),
    )
    .await;
    r.problem(401);
    assert_eq!(r.headers[header::ACCESS_CONTROL_ALLOW_ORIGIN], SITE);
    let exposed = r.headers[header::ACCESS_CONTROL_EXPOSE_HEADERS]
        .to_str()
        .unwrap()
        .to_string();
    for h in [
        "retry-after",
        "www-authenticate",
        "ratelimit-remaining",
        "x-request-id",
        "x-condense-fidelity",
        "x-provider-request-id",
    ] {
        assert!(exposed.contains(h), "{exposed}");
    }
    let r = send(
        &app,
        from(SITE, post_as(KEY_A, "/v1/tokens", &json!({"text": "a"}))),
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.headers[header::ACCESS_CONTROL_ALLOW_ORIGIN], SITE);
    // Another origin gets no permission.
    let r = send(&app, preflight("https://evil.example.com")).await;
    assert!(
        r.headers.get(header::ACCESS_CONTROL_ALLOW_ORIGIN).is_none(),
        "{:?}",
        r.headers
    );

    let any = app_with(condense::Config {
        access: condense::config::AccessSettings {
            cors_origins: vec!["*".into()],
            ..Default::default()
        },
        ..Default::default()
    });
    let r = send(&any, preflight("https://anywhere.example")).await;
    assert_eq!(r.headers[header::ACCESS_CONTROL_ALLOW_ORIGIN], "*");
}

#[test]
fn a_bad_origin_stops_the_start() {
    let err = condense::AppState::new(condense::Config {
        access: condense::config::AccessSettings {
            cors_origins: vec!["https://agents.example.com/".into()],
            ..Default::default()
        },
        ..Default::default()
    })
    .err()
    .expect("a trailing slash is not an origin");
    assert!(err.to_string().contains("trailing slash"), "{err}");
}

/// Compressions the upstream writes, each of a different thread (identical
/// ones would share one upstream call).
fn llm_compression(i: usize) -> Value {
    let mut messages = chat(12);
    messages[0] = json!({"role": "user", "content": format!("thread number {i}")});
    json!({"messages": messages, "force": true, "summarizer": {"strategy": "llm"}})
}

#[tokio::test]
async fn past_the_concurrency_limit_requests_are_refused_not_queued() {
    let s = stub::start(Fault::Held, false).await;
    let app = app_with(condense::Config {
        limits: condense::config::LimitSettings {
            max_concurrency: 2,
            ..Default::default()
        },
        upstream: condense::config::UpstreamSettings {
            url: Some(s.url.clone()),
            model: "stub-model".into(),
            timeout: std::time::Duration::from_secs(600),
            max_retries: 0,
            ..Default::default()
        },
        ..Default::default()
    });
    let held: Vec<_> = (0..2)
        .map(|i| {
            let app = app.clone();
            tokio::spawn(async move { post(&app, "/v1/compress", &llm_compression(i)).await })
        })
        .collect();
    // Both are at work once the upstream has seen both.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while s.calls() < 2 {
        assert!(
            std::time::Instant::now() < deadline,
            "the upstream saw {} calls",
            s.calls()
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let refused = post(&app, "/v1/tokens", &json!({"text": "hello"})).await;
    let p = refused.problem(503);
    assert_eq!(p["type"], "urn:condense:problem:overloaded");
    assert!(p["detail"].as_str().unwrap().contains("limit of 2"), "{p}");
    assert_eq!(number(&refused, "retry-after"), 1);
    // The probes are never refused.
    for path in ["/healthz", "/readyz"] {
        let r = send(&app, Request::get(path).body(Body::empty()).unwrap()).await;
        assert_eq!(r.status, 200, "{path}");
    }
    s.release();
    for h in held {
        let r = h.await.unwrap();
        assert_eq!(r.status, 200, "{}", r.text());
    }
    // The places are free again.
    assert_eq!(
        post(&app, "/v1/tokens", &json!({"text": "hello"}))
            .await
            .status,
        200
    );
}

/// Sends [`every_route`] to `app`: those `guarded` selects answer `status`
/// with the problem `slug`; the others pass the gate.
async fn walk(app: &Router, guarded: fn(Access) -> bool, status: u16, slug: &str) {
    for (access, req) in every_route() {
        let what = format!("{} {}", req.method(), req.uri());
        let r = send(app, req).await;
        if guarded(access) {
            let p = r.problem(status);
            assert_eq!(p["type"], format!("urn:condense:problem:{slug}"), "{what}");
        } else {
            assert_ne!(r.status, status, "{what} passes: {}", r.text());
        }
    }
}

/// Each gate on every route it guards: past the rate limit and with the
/// memory budget all taken, every route but the probes and `/metrics`; with
/// every place taken, the API and the playground (the proxy forwards
/// unchanged).
#[tokio::test]
async fn each_gate_refuses_every_route_it_guards() {
    let not_probes = |a| !matches!(a, Access::Probe | Access::Metrics);
    let limited = app_with(condense::Config {
        access: condense::config::AccessSettings {
            rate_limit_per_sec: 0.001,
            rate_limit_burst: 1,
            ..Default::default()
        },
        ..Default::default()
    });
    // In-process every request shares one bucket: this one empties it.
    assert_eq!(get(&limited, "/v1/models").await.status, 200);
    walk(&limited, not_probes, 429, "rate-limited").await;

    let unreachable = Some("http://127.0.0.1:9".to_string());
    let state = condense::AppState::new(condense::Config {
        limits: condense::config::LimitSettings {
            memory_budget_bytes: 1024 * 1024,
            max_concurrency: 1,
            ..Default::default()
        },
        proxy: condense::config::ProxySettings {
            openai_url: unreachable.clone(),
            anthropic_url: unreachable,
            ..Default::default()
        },
        ..Default::default()
    })
    .expect("app state");
    let app = condense::http::router(state.clone());
    let budget = state
        .memory
        .try_reserve(u64::MAX)
        .expect("the whole budget");
    walk(&app, not_probes, 503, "overloaded").await;
    drop(budget);
    let place = state.overload.try_enter(0).expect("the one place");
    walk(
        &app,
        |a| matches!(a, Access::Api | Access::Page),
        503,
        "overloaded",
    )
    .await;
    drop(place);
}
