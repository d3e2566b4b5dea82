//! A stub upstream for faults a real server will not produce on demand:
//! 429 with Retry-After, 500, hangs, cut connections, garbage, empty answers.
//! It counts its calls and records the headers it got.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::json;

#[derive(Clone, Copy, Debug)]
pub enum Fault {
    Ok,
    /// 429 with `Retry-After: 1` on the first call, then Ok.
    RateLimitedOnce,
    ServerError,
    BadRequest,
    /// Sleeps far past any timeout.
    Hang,
    Garbage,
    EmptyChoices,
    EmptyText,
    /// 401 whose body echoes the request's credentials back.
    EchoKey,
    /// Ok after a delay (to overlap concurrent requests).
    SlowOk,
    /// Ok once [`Stub::release`] is called, not before: a request that is
    /// slow for exactly as long as a test wants, whatever the machine.
    Held,
}

#[derive(Clone)]
pub struct Stub {
    pub calls: Arc<AtomicUsize>,
    pub headers: Arc<Mutex<Vec<HeaderMap>>>,
    pub bodies: Arc<Mutex<Vec<String>>>,
    pub url: String,
    /// Closed by [`Stub::release`]; held calls wait on it.
    gate: Arc<tokio::sync::Semaphore>,
}

impl Stub {
    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    /// Lets every held call (and every later one) answer.
    pub fn release(&self) {
        self.gate.close();
    }
}

const SUMMARY: &str = "## Task and progress\n- Fix the failing test (stub summary).";

async fn answer(
    fault: Fault,
    anthropic: bool,
    n: usize,
    headers: &HeaderMap,
    gate: &tokio::sync::Semaphore,
) -> Response {
    let ok = || {
        if anthropic {
            json!({"type": "message", "content": [{"type": "text", "text": SUMMARY}], "stop_reason": "end_turn",
                   "usage": {"input_tokens": 321, "output_tokens": 17}})
        } else {
            json!({"choices": [{"message": {"role": "assistant", "content": SUMMARY}, "finish_reason": "stop"}],
                   "usage": {"prompt_tokens": 321, "completion_tokens": 17}})
        }
    };
    match fault {
        Fault::Ok => axum::Json(ok()).into_response(),
        Fault::Held => {
            // Never granted: returns when the gate is closed.
            let _ = gate.acquire().await;
            axum::Json(ok()).into_response()
        }
        Fault::SlowOk => {
            tokio::time::sleep(Duration::from_millis(400)).await;
            axum::Json(ok()).into_response()
        }
        Fault::RateLimitedOnce if n == 1 => (
            StatusCode::TOO_MANY_REQUESTS,
            [("retry-after", "1")],
            "slow down",
        )
            .into_response(),
        Fault::RateLimitedOnce => axum::Json(ok()).into_response(),
        Fault::ServerError => {
            (StatusCode::INTERNAL_SERVER_ERROR, "upstream exploded").into_response()
        }
        Fault::BadRequest => (StatusCode::BAD_REQUEST, "{\"error\": \"bad\"}").into_response(),
        Fault::Hang => {
            tokio::time::sleep(Duration::from_secs(30)).await;
            axum::Json(ok()).into_response()
        }
        Fault::Garbage => (
            StatusCode::OK,
            [("content-type", "application/json")],
            "{\"choices\": [tru",
        )
            .into_response(),
        Fault::EmptyChoices => axum::Json(json!({"choices": []})).into_response(),
        Fault::EmptyText => {
            axum::Json(json!({"choices": [{"message": {"content": "   "}}]})).into_response()
        }
        Fault::EchoKey => {
            let auth = headers
                .get("authorization")
                .or(headers.get("x-api-key"))
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default();
            (
                StatusCode::UNAUTHORIZED,
                format!("invalid credentials: {auth}"),
            )
                .into_response()
        }
    }
}

/// Starts a stub on a free loopback port, speaking OpenAI (or Anthropic).
pub async fn start(fault: Fault, anthropic: bool) -> Stub {
    let path = if anthropic {
        "/v1/messages"
    } else {
        "/chat/completions"
    };
    start_on(fault, anthropic, path).await
}

/// [`start`], answering at `path` (another endpoint of the same API).
pub async fn start_on(fault: Fault, anthropic: bool, path: &str) -> Stub {
    let calls = Arc::new(AtomicUsize::new(0));
    let headers = Arc::new(Mutex::new(Vec::new()));
    let bodies = Arc::new(Mutex::new(Vec::new()));
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let (c, h, b, g) = (calls.clone(), headers.clone(), bodies.clone(), gate.clone());
    let handler = move |hm: HeaderMap, body: Bytes| {
        let (c, h, b, g) = (c.clone(), h.clone(), b.clone(), g.clone());
        async move {
            let n = c.fetch_add(1, Ordering::SeqCst) + 1;
            h.lock().unwrap().push(hm.clone());
            b.lock()
                .unwrap()
                .push(String::from_utf8_lossy(&body).into_owned());
            answer(fault, anthropic, n, &hm, &g).await
        }
    };
    let app = Router::new().route(path, post(handler));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    Stub {
        calls,
        headers,
        bodies,
        url: format!("http://{addr}"),
        gate,
    }
}

/// A server that accepts connections and closes them at once (a cut connection).
pub async fn start_cutter() -> Stub {
    let calls = Arc::new(AtomicUsize::new(0));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let c = calls.clone();
    tokio::spawn(async move {
        loop {
            let Ok((socket, _)) = listener.accept().await else {
                return;
            };
            c.fetch_add(1, Ordering::SeqCst);
            drop(socket);
        }
    });
    Stub {
        calls,
        headers: Arc::default(),
        bodies: Arc::default(),
        url: format!("http://{addr}"),
        gate: Arc::new(tokio::sync::Semaphore::new(0)),
    }
}

/// A server that answers every request `307 Temporary Redirect` to the same
/// path on `target`, counting the requests.
pub async fn start_redirect(target: &str) -> Stub {
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let target = target.to_string();
    let app = Router::new().fallback(move |uri: axum::http::Uri| {
        let (c, target) = (c.clone(), target.clone());
        async move {
            c.fetch_add(1, Ordering::SeqCst);
            (
                StatusCode::TEMPORARY_REDIRECT,
                [("location", format!("{target}{}", uri.path()))],
            )
                .into_response()
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    Stub {
        calls,
        headers: Arc::default(),
        bodies: Arc::default(),
        url: format!("http://{addr}"),
        gate: Arc::new(tokio::sync::Semaphore::new(0)),
    }
}
