//! The client against a scripted server on a real socket: what it holds
//! while it waits, and how much of an answer it reads.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::http::StatusCode;
use axum::response::IntoResponse;

use super::*;

/// A server whose n-th call (from 1) is answered by `answer(n)`.
async fn serve<F, R>(answer: F) -> (String, Arc<AtomicUsize>)
where
    F: Fn(usize) -> R + Clone + Send + Sync + 'static,
    R: IntoResponse,
{
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = calls.clone();
    let app = axum::Router::new().fallback(move || {
        let n = seen.fetch_add(1, Ordering::SeqCst) + 1;
        let answer = answer.clone();
        async move { answer(n) }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, calls)
}

fn client(url: &str, cap: Duration) -> Upstream {
    Upstream::new(UpstreamConfig {
        kind: Kind::OpenAi,
        base_url: url.parse().unwrap(),
        api_key: Secret::new(""),
        model: "m".into(),
        allowed_models: vec![],
        timeout: Duration::from_secs(60),
        retry: RetryPolicy {
            max_retries: 2,
            budget: cap * 3,
            cap,
            ..RetryPolicy::default()
        },
        max_concurrency: 1,
        context_window: 8192,
        result_chars: 1000,
    })
    .unwrap()
}

fn request() -> ChatRequest {
    ChatRequest {
        model: "m".into(),
        system: "s".into(),
        user: "u".into(),
        max_tokens: 16,
    }
}

/// Polls `done` every 10 ms for up to a minute (what is asserted is that
/// it happens at all; the minute only bounds a failing run).
async fn eventually(done: impl Fn() -> bool) -> bool {
    for _ in 0..6000 {
        if done() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    false
}

#[tokio::test]
async fn a_call_waiting_out_a_retry_after_date_holds_no_place() {
    // Asked to wait ten minutes (as a date), it waits the policy's cap.
    let later = std::time::SystemTime::now() + Duration::from_secs(600);
    let date = httpdate::fmt_http_date(later);
    let (url, calls) = serve(move |_| {
        (
            StatusCode::TOO_MANY_REQUESTS,
            [("retry-after", date.clone())],
            "slow down",
        )
    })
    .await;
    let up = client(&url, Duration::from_secs(120));
    let waiting = {
        let up = up.clone();
        tokio::spawn(async move { up.complete(&request()).await })
    };
    assert!(eventually(|| calls.load(Ordering::SeqCst) == 1).await);
    // The only place is free while the call sleeps through its back-off.
    assert!(
        eventually(|| up.permits.available_permits() == 1).await,
        "the back-off holds the concurrency place"
    );
    // Read as a date, the wait is the cap (two minutes): no second call
    // comes. Ignored, the back-off would be a quarter of a second.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        calls.load(Ordering::SeqCst),
        1,
        "the date was not read as a long wait"
    );
    assert!(!waiting.is_finished());
    waiting.abort();
}

#[tokio::test]
async fn an_answer_larger_than_the_bound_is_not_read_whole() {
    let (url, calls) = serve(|_| {
        let huge = format!(
            r#"{{"choices":[{{"message":{{"content":"{}"}}}}]}}"#,
            "a".repeat(answer::MAX_ANSWER_BYTES + 1)
        );
        ([("content-type", "application/json")], huge)
    })
    .await;
    let called = client(&url, Duration::from_secs(1))
        .complete(&request())
        .await;
    match called.result {
        Err(UpstreamError::Garbage(why)) => assert!(why.contains("larger than"), "{why}"),
        other => panic!("{:?}", other.map(|r| r.text.len())),
    }
    assert_eq!(calls.load(Ordering::SeqCst), 1, "garbage is not retried");
}
