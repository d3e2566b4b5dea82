//! Single flight across replicas when the upstream is slow, against a real
//! PostgreSQL: a summary that takes longer than the claim's lease is still
//! written once, and every replica answers its bytes; a request that is cut
//! off gives its claim up at once.
//!
//! The upstream is a stub here only for its timing (a real provider takes
//! 20–60 s for a long summary; the local model cannot be made that slow on
//! demand): its first call is held until the test releases it, which it
//! does on an event (the claim seen renewed in the database), never after
//! a fixed sleep. The call count is what is checked.
use crate::support::{live, server};

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{Request, header};
use axum::routing::post;
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tokio::sync::watch;
use tower::ServiceExt;

/// Longest wait for anything expected to happen: never reached by a test
/// that passes, whatever the load.
const GENEROUS: Duration = Duration::from_secs(600);

/// An OpenAI-compatible upstream whose first call is held until `release`
/// is sent `true` (never, if it is not); later calls answer at once.
struct HeldUpstream {
    url: String,
    calls: Arc<AtomicUsize>,
    release: watch::Sender<bool>,
}

async fn held_upstream() -> HeldUpstream {
    let calls = Arc::new(AtomicUsize::new(0));
    let (release, released) = watch::channel(false);
    let counter = calls.clone();
    let app = Router::new().route(
        "/chat/completions",
        post(move || {
            let n = counter.fetch_add(1, Ordering::SeqCst) + 1;
            let mut released = released.clone();
            async move {
                if n == 1 {
                    let _ = released.wait_for(|r| *r).await;
                }
                axum::Json(json!({
                    "choices": [{"message": {"role": "assistant", "content": format!("## Task and progress\n- summary from call {n}")}, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 100, "completion_tokens": 10}
                }))
            }
        }),
    );
    let url = server::serve_router(app).await;
    HeldUpstream {
        url,
        calls,
        release,
    }
}

/// Waits until the upstream's first call has come (so its caller holds the
/// claim), then until the one claim in `database` has been renewed `times`
/// times (its `expires_at` seen at `times + 1` values).
async fn renewed(upstream: &HeldUpstream, database: &str, times: usize) {
    let pool = sqlx::PgPool::connect(database).await.expect("connects");
    let mut seen = std::collections::BTreeSet::new();
    tokio::time::timeout(GENEROUS, async {
        while upstream.calls.load(Ordering::SeqCst) == 0 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        while seen.len() <= times {
            let at: Option<String> =
                sqlx::query_scalar("SELECT max(expires_at)::text FROM summary_claims")
                    .fetch_one(&pool)
                    .await
                    .expect("reads the claims");
            seen.extend(at);
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("the claim was not renewed {times} times in {GENEROUS:?}"));
}

async fn replica(database: &str, upstream: &str, lease_secs: u64, timeout_secs: u64) -> Router {
    let config = condense::Config {
        limits: condense::config::LimitSettings {
            request_timeout: Duration::from_secs(timeout_secs),
            ..Default::default()
        },
        upstream: condense::config::UpstreamSettings {
            url: Some(upstream.to_string()),
            model: "stub-model".into(),
            timeout: Duration::from_secs(600),
            retry_budget: Duration::from_secs(600),
            ..Default::default()
        },
        cache: condense::config::CacheSettings {
            database_url: Some(database.to_string()),
            claim_lease: Duration::from_secs(lease_secs),
            db_acquire_timeout: Duration::from_millis(30_000),
            ..Default::default()
        },
        ..Default::default()
    };
    condense::http::router(
        condense::AppState::connect(config)
            .await
            .expect("state builds"),
    )
}

fn body() -> Value {
    let messages: Vec<Value> = (0..40)
        .map(|i| {
            let role = if i % 2 == 0 { "user" } else { "assistant" };
            json!({"role": role, "content": format!("step {i}: please look at src/m{i}.rs")})
        })
        .collect();
    json!({"messages": messages, "force": true, "summarizer": {"strategy": "llm"}})
}

async fn compress(app: &Router) -> (u16, Value) {
    let req = Request::post("/v1/compress")
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(serde_json::to_vec(&body()).unwrap()))
        .unwrap();
    let res = app.clone().oneshot(req).await.unwrap();
    let status = res.status().as_u16();
    let bytes = res.into_body().collect().await.unwrap().to_bytes();
    (status, serde_json::from_slice(&bytes).unwrap())
}

/// Six requests over two replicas while one upstream call outlasts the
/// claim's 20 s lease, which its holder renews every third of it (a renewal
/// may be 13 s late on a stalled machine before another replica could take
/// over). The call is released once the claim has been renewed four times:
/// it has then lasted some 27 s, longer than the lease.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_summary_is_written_once_for_every_replica() {
    let Some(guard) = live::new_database("a_slow_summary_is_written_once_for_every_replica").await
    else {
        return;
    };
    let db = guard.url();
    let upstream = held_upstream().await;
    let (a, b) = (
        replica(&db, &upstream.url, 20, 600).await,
        replica(&db, &upstream.url, 20, 600).await,
    );
    let tasks: Vec<_> = (0..6)
        .map(|i| {
            let app = if i % 2 == 0 { a.clone() } else { b.clone() };
            tokio::spawn(async move { compress(&app).await })
        })
        .collect();
    renewed(&upstream, &db, 4).await;
    upstream.release.send(true).unwrap();
    let mut summaries = Vec::new();
    for t in tasks {
        let (status, out) = t.await.unwrap();
        assert_eq!(status, 200, "{out}");
        assert_eq!(out["degraded"], false, "{out}");
        summaries.push((
            out["summary"]["content"].clone(),
            out["summary"]["created_at"].clone(),
        ));
    }
    assert_eq!(
        upstream.calls.load(Ordering::SeqCst),
        1,
        "one upstream call in all"
    );
    assert!(
        summaries.windows(2).all(|w| w[0] == w[1]),
        "every replica answers the same bytes: {summaries:?}"
    );
}

/// A request cut off by its time limit while it holds the claim releases it
/// at once: another replica then writes the summary well inside the claim's
/// 600 s lease (its own time limit is 300 s, so waiting out the lease would
/// fail it). The first request's limit, 20 s, covers a lazy connect, the
/// migrations and the claim tenfold; its upstream call never answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_out_request_gives_its_claim_up() {
    let Some(guard) = live::new_database("a_timed_out_request_gives_its_claim_up").await else {
        return;
    };
    let db = guard.url();
    let upstream = held_upstream().await;
    let cut_off = replica(&db, &upstream.url, 600, 20).await;
    let (status, out) = compress(&cut_off).await;
    assert_eq!(status, 503, "the first request times out: {out}");
    assert_eq!(out["type"], "urn:condense:problem:timeout");

    let other = replica(&db, &upstream.url, 600, 300).await;
    let (status, out) = compress(&other).await;
    assert_eq!(status, 200, "{out}");
    assert_eq!(out["summary"]["strategy"], "llm", "{out}");
    assert_eq!(upstream.calls.load(Ordering::SeqCst), 2);
}
