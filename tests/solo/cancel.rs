//! Work on the blocking pool stops when its request is gone: timed out
//! (503) or abandoned by its client. Measured in bytes tokenized, not in
//! seconds: the request is a thread of `-` runs (the slowest text for a BPE
//! tokenizer), and once the pool has drained, what was tokenized after the
//! request was gone must be a few messages at most (each task finishes the
//! string in hand, then looks at its flag). The check never assumes how
//! fast a machine tokenizes: it compares the count when the request ended
//! with the count when the work stopped.
//!
//! In `tests/solo/`: the byte counter is per process.

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

/// Waits until no cancellable task is left on the blocking pool (a bound
/// far past any count here: only a count that never ends reaches it).
async fn drained() {
    for _ in 0..30_000 {
        if cancel::running() == 0 {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    panic!("the blocking pool did not drain in 10 minutes");
}

/// The app with a 1 s request time limit and no limit on text (more than
/// the default admits: the point is the work).
fn timing_out() -> axum::Router {
    condense::http::router(
        AppState::new(Config {
            limits: condense::config::LimitSettings {
                request_timeout: std::time::Duration::from_secs(1),
                max_total_chars: 0,
                ..Default::default()
            },
            ..Default::default()
        })
        .expect("state builds"),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counting_stops_when_the_request_is_gone() {
    let _process = crate::alone().await;
    let app = timing_out();

    // Timed out: 503, and the task stops soon after. The thread is far more
    // than a second's work, so the limit falls while it counts: of its 7.2 MB
    // of dashes, a 2-core machine counted 48 KB by the 503 (the test profile
    // is unoptimized), a margin of 150 that a faster machine does not close.
    let (body, size) = dashes(MESSAGES, CHARS);
    let before = tokenized_bytes();
    let res = app.clone().oneshot(request(&body)).await.unwrap();
    let at_end = tokenized_bytes();
    assert_eq!(res.status(), StatusCode::SERVICE_UNAVAILABLE);
    drained().await;
    assert_stopped("after the 503", before, at_end, size);

    // Abandoned: the client drops the request once counting has begun.
    let (body, size) = dashes(MESSAGES, CHARS + 1);
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
    let at_end = tokenized_bytes();
    drained().await;
    assert_stopped("after the client left", before, at_end, size);
}

/// Messages per thread, and characters per message: under the default body
/// limit (8 MiB).
const MESSAGES: usize = 450;
const CHARS: usize = 16_000;

/// What was tokenized between the request's end (`at_end`) and now, once
/// the pool has drained, is at most a message per blocking task (two here,
/// with room): never the rest of the thread.
fn assert_stopped(when: &str, before: u64, at_end: u64, size: u64) {
    let after = tokenized_bytes() - at_end;
    let done = at_end - before;
    assert!(
        done < size,
        "{when}: the whole thread ({size} bytes) was tokenized before the request ended"
    );
    assert!(
        after <= 8 * CHARS as u64,
        "{when}: {after} more bytes were tokenized ({done} of {size} before): the work did not stop"
    );
}

/// One pre-tokenizer piece of millions of bytes (a run of `-`) is counted
/// in windows that look at the flag: the 503 stops it too, not only the
/// next message. Its bytes are tallied as they are counted, so what was
/// tokenized after the request ended is at most a window or two.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counting_one_huge_piece_stops_when_the_request_is_gone() {
    let _process = crate::alone().await;
    let app = timing_out();
    // Under the default body limit (8 MiB); more than a second's work even
    // in a release build (4 such pieces took 5.7 s of CPU).
    let size = 3_990_000;
    let body = json!({"messages": [{"role": "user", "content": "-".repeat(size)}]});
    let before = tokenized_bytes();
    let res = app.oneshot(request(&body)).await.unwrap();
    let at_end = tokenized_bytes();
    assert_eq!(res.status(), StatusCode::SERVICE_UNAVAILABLE);
    drained().await;
    let after = tokenized_bytes() - at_end;
    let done = at_end - before;
    assert!(
        done < size as u64,
        "the whole piece ({size} bytes) was counted before the request ended"
    );
    // A window is 16 KiB and its margin 1 KiB; two tasks' worth, with room.
    assert!(
        after <= 4 * 17 * 1024,
        "{after} more bytes were tokenized after the 503 ({done} of {size} before): the count did not stop"
    );
}
