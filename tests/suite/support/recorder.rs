//! A recording HTTP relay: sits between condense and a real server (the
//! local LLM, a provider), forwards every request as it came and every
//! answer as it streams back, and keeps each exchange, so a test can see
//! how many calls condense made, to which path, with which body, during
//! which of its own steps, and what came back. The counts and labels a
//! test asserts are derived from the exchanges in the test itself.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use http_body_util::BodyExt;
use serde_json::Value;

/// One request the relay forwarded, and its answer.
#[derive(Debug, Clone)]
pub struct Exchange {
    /// Path and query, as the client asked.
    pub target: String,
    /// The request body, byte for byte.
    pub request: Bytes,
    /// The tag the test had set when the request arrived.
    pub tag: usize,
    /// The answer's status: `None` until its head is in; 502 when the
    /// server could not be reached.
    pub status: Option<StatusCode>,
    /// The answer's body so far (all of it once the client has read it).
    pub response: Vec<u8>,
}

impl Exchange {
    /// The path, without the query.
    pub fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or_default()
    }

    /// The request body as JSON (`Null` when it is not).
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.request).unwrap_or(Value::Null)
    }

    /// The answer's body as JSON (`Null` when it is not).
    pub fn answer(&self) -> Value {
        serde_json::from_slice(&self.response).unwrap_or(Value::Null)
    }
}

/// The relay on a free loopback port, in front of one base URL.
pub struct Recorder {
    /// The relay's base URL: what condense is pointed at instead of the target.
    pub url: String,
    shared: Shared,
}

#[derive(Clone)]
struct Shared {
    target: String,
    client: reqwest::Client,
    tag: Arc<AtomicUsize>,
    log: Arc<Mutex<Vec<Exchange>>>,
}

impl Recorder {
    /// Relays `{url}{path and query}` to `{target}{path and query}`.
    pub async fn start(target: &str) -> Recorder {
        let shared = Shared {
            target: target.trim_end_matches('/').to_string(),
            client: reqwest::Client::new(),
            tag: Arc::default(),
            log: Arc::default(),
        };
        let app = Router::new().fallback(forward).with_state(shared.clone());
        let url = super::server::serve_router(app).await;
        Recorder { url, shared }
    }

    /// Tags the requests that arrive from now on (say, the agent's turn).
    pub fn set_tag(&self, tag: usize) {
        self.shared.tag.store(tag, Ordering::SeqCst);
    }

    /// Every exchange so far, in the order the requests arrived.
    pub fn exchanges(&self) -> Vec<Exchange> {
        self.shared.log.lock().unwrap().clone()
    }

    /// How many requests have arrived.
    pub fn count(&self) -> usize {
        self.shared.log.lock().unwrap().len()
    }
}

/// Hop-by-hop headers, and the ones the client of each hop sets itself.
const NOT_FORWARDED: [&str; 8] = [
    "host",
    "content-length",
    "connection",
    "keep-alive",
    "transfer-encoding",
    "te",
    "upgrade",
    "proxy-connection",
];

/// Records the request (before forwarding, so a call the client gave up
/// on still counts), forwards it, and streams the answer back, recording
/// its body as it passes.
async fn forward(
    State(s): State<Shared>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let target = uri.path_and_query().map_or("/", |p| p.as_str()).to_string();
    let at = {
        let mut log = s.log.lock().unwrap();
        log.push(Exchange {
            target: target.clone(),
            request: body.clone(),
            tag: s.tag.load(Ordering::SeqCst),
            status: None,
            response: Vec::new(),
        });
        log.len() - 1
    };
    let mut req = s
        .client
        .request(method, format!("{}{target}", s.target))
        .body(body);
    for (name, value) in &headers {
        if !NOT_FORWARDED.contains(&name.as_str()) {
            req = req.header(name, value);
        }
    }
    let answer = match req.send().await {
        Ok(answer) => axum::http::Response::<reqwest::Body>::from(answer),
        Err(e) => {
            let text = format!("the recorder could not reach {}: {e}", s.target);
            let mut log = s.log.lock().unwrap();
            log[at].status = Some(StatusCode::BAD_GATEWAY);
            log[at].response = text.clone().into_bytes();
            return (StatusCode::BAD_GATEWAY, text).into_response();
        }
    };
    let (head, body) = answer.into_parts();
    s.log.lock().unwrap()[at].status = Some(head.status);
    let log = s.log.clone();
    let body = body.map_frame(move |frame| {
        if let Some(data) = frame.data_ref() {
            log.lock().unwrap()[at].response.extend_from_slice(data);
        }
        frame
    });
    let mut out = Response::new(Body::new(body));
    *out.status_mut() = head.status;
    for (name, value) in &head.headers {
        if !NOT_FORWARDED.contains(&name.as_str()) {
            out.headers_mut().append(name, value.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A target that answers 418 with what it was asked, and a header.
    async fn echo() -> String {
        let app = Router::new().fallback(
            |method: Method, uri: Uri, headers: HeaderMap, body: Bytes| async move {
                let asked = json!({
                    "method": method.as_str(), "uri": uri.to_string(),
                    "key": headers["x-api-key"].to_str().unwrap(),
                    "body": String::from_utf8_lossy(&body),
                });
                (
                    StatusCode::IM_A_TEAPOT,
                    [("retry-after", "7")],
                    asked.to_string(),
                )
            },
        );
        super::super::server::serve_router(app).await
    }

    #[tokio::test]
    async fn forwards_as_it_came_and_records_each_exchange() {
        let recorder = Recorder::start(&format!("{}/base/", echo().await)).await;
        recorder.set_tag(3);
        let res = reqwest::Client::new()
            .put(format!("{}/v1/x?beta=true", recorder.url))
            .header("x-api-key", "k1")
            .body(r#"{"a":1}"#)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 418);
        assert_eq!(res.headers()["retry-after"], "7");
        let text = res.text().await.unwrap();
        let asked = json!({"method": "PUT", "uri": "/base/v1/x?beta=true", "key": "k1", "body": r#"{"a":1}"#});
        assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), asked);
        let calls = recorder.exchanges();
        assert_eq!(calls.len(), 1);
        let call = &calls[0];
        assert_eq!(
            (call.target.as_str(), call.path()),
            ("/v1/x?beta=true", "/v1/x")
        );
        assert_eq!((call.tag, call.json()), (3, json!({"a": 1})));
        assert_eq!(call.status, Some(StatusCode::IM_A_TEAPOT));
        assert_eq!(
            (call.response.as_slice(), call.answer()),
            (text.as_bytes(), asked)
        );
    }

    #[tokio::test]
    async fn an_unreachable_target_is_a_502() {
        let port = super::super::process::unused_port();
        let recorder = Recorder::start(&format!("http://127.0.0.1:{port}")).await;
        let res = reqwest::Client::new()
            .post(format!("{}/v1/chat/completions", recorder.url))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 502);
        assert_eq!(recorder.count(), 1);
        assert_eq!(
            recorder.exchanges()[0].status,
            Some(StatusCode::BAD_GATEWAY)
        );
    }
}
