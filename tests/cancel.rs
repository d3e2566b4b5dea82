//! Work on the blocking pool stops when its request is gone: timed out
//! (503) or abandoned by its client. Measured in bytes tokenized, not in
//! seconds: the request is a megabytes-long thread of `-` runs (the slowest
//! text for a BPE tokenizer), far more than fits the one-second limit, and
//! once the pool has drained the bytes tokenized must be a small part of it.
//!
//! Its own test binary: the byte counter is per process.

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use serde_json::{Value, json};
use tower::ServiceExt;

use condense::tokens::{cancel, tokenized_bytes};
use condense::{AppState, Config};

/// A valid thread of `n` messages of `chars` dashes each (each one distinct,
/// so none is a memo hit), and its size.
fn dashes(n: usize, chars: usize) -> (Value, u64) {
    let messages: Vec<Value> = (0..n)
        .map(|i| {
            let role = if i % 2 == 0 { "user" } else { "assistant" };
            json!({"role": role, "content": format!("{i} {}", "-".repeat(chars))})
        })
        .collect();
    (json!({"messages": messages}), (n * chars) as u64)
}

fn request(body: &Value) -> Request<Body> {
    Request::post("/v1/tokens")
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body.to_string()))
        .unwrap()
}

/// Waits until no cancellable task is left on the blocking pool.
async fn drained() {
    while cancel::running() > 0 {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counting_stops_when_the_request_is_gone() {
    let app = condense::http::router(
        AppState::new(Config {
            limits: condense::config::LimitSettings {
                request_timeout: std::time::Duration::from_secs(1),
                // More text than the default limit admits: the point is the work.
                max_total_chars: 0,
                ..Default::default()
            },
            ..Default::default()
        })
        .expect("state builds"),
    );

    // Timed out: 503, and the task stops soon after.
    let (body, size) = dashes(256, 16_000);
    let before = tokenized_bytes();
    let res = app.clone().oneshot(request(&body)).await.unwrap();
    assert_eq!(res.status(), StatusCode::SERVICE_UNAVAILABLE);
    drained().await;
    let spent = tokenized_bytes() - before;
    assert!(
        spent < size / 4,
        "after the 503, {spent} of {size} bytes were tokenized: the work did not stop"
    );

    // Abandoned: the client drops the request once counting has begun.
    let (body, size) = dashes(256, 16_001);
    let before = tokenized_bytes();
    let patient = condense::http::router(
        AppState::new(Config {
            limits: condense::config::LimitSettings {
                max_total_chars: 0,
                ..Default::default()
            },
            ..Default::default()
        })
        .unwrap(),
    );
    let task = tokio::spawn(patient.oneshot(request(&body)));
    while tokenized_bytes() == before {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    task.abort();
    let _ = task.await;
    drained().await;
    let spent = tokenized_bytes() - before;
    assert!(
        spent < size / 4,
        "after the client left, {spent} of {size} bytes were tokenized: the work did not stop"
    );
}
