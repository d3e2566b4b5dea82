//! The provider's bill, read off its answers on the way (issue 34): the
//! client gets every byte as the provider sent it, and `GET /metrics`
//! counts what the provider billed, by kind, whether the answer was JSON or
//! a stream, and even when the client left mid-stream.
use crate::support::{prometheus, server};

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Request, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use futures_util::StreamExt;
use http_body_util::BodyExt;
use serde_json::json;
use tower::ServiceExt;

/// An Anthropic stream as the Messages API sends it (documented shape,
/// numbers of ours): input and cache on `message_start`, output on
/// `message_delta`, and a tool input that mentions `usage` in between.
const STREAM: &str = concat!(
    "event: message_start\n",
    r#"data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude-x","usage":{"input_tokens":25,"cache_creation_input_tokens":3000,"cache_read_input_tokens":90000,"cache_creation":{"ephemeral_5m_input_tokens":1000,"ephemeral_1h_input_tokens":2000},"output_tokens":1}}}"#,
    "\n\nevent: content_block_delta\n",
    r#"data: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"usage\": {\"output_tokens\": 999}}"}}"#,
    "\n\nevent: message_delta\n",
    r#"data: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":15}}"#,
    "\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
);

/// A Chat Completions answer: 2,006 prompt tokens, 1,920 of them cached.
const CHAT: &str = r#"{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":2006,"completion_tokens":300,"total_tokens":2306,"prompt_tokens_details":{"cached_tokens":1920},"completion_tokens_details":{"reasoning_tokens":256}}}"#;

/// A provider answering `STREAM` on Messages and `CHAT` on Chat
/// Completions, recording the request headers it was sent.
async fn provider() -> (String, Arc<Mutex<Vec<HeaderMap>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (s1, s2) = (seen.clone(), seen.clone());
    let app = Router::new()
        .route(
            "/v1/messages",
            post(move |h: HeaderMap| async move {
                let hang = h.contains_key("x-test-hang");
                s1.lock().unwrap().push(h);
                let body = if hang {
                    // The start, then nothing: the answer never ends by itself.
                    let start = &STREAM[..STREAM.find("\n\n").unwrap() + 2];
                    let first = futures_util::stream::once(async move {
                        Ok::<_, std::convert::Infallible>(Bytes::from(start))
                    });
                    Body::from_stream(first.chain(futures_util::stream::pending()))
                } else {
                    Body::from(STREAM)
                };
                ([(header::CONTENT_TYPE, "text/event-stream")], body).into_response()
            }),
        )
        .route(
            "/v1/chat/completions",
            post(move |h: HeaderMap| async move {
                s2.lock().unwrap().push(h);
                ([(header::CONTENT_TYPE, "application/json")], CHAT).into_response()
            }),
        );
    (server::serve_router(app).await, seen)
}

fn condense(url: &str) -> Router {
    let config = condense::Config {
        proxy: condense::config::ProxySettings {
            openai_url: Some(format!("{url}/v1")),
            anthropic_url: Some(url.to_string()),
            ..Default::default()
        },
        ..Default::default()
    };
    condense::http::router(condense::AppState::new(config).expect("state builds"))
}

async fn post_json(app: &Router, path: &str, body: serde_json::Value) -> Response {
    post_with(app, path, body, &[]).await
}

async fn post_with(
    app: &Router,
    path: &str,
    body: serde_json::Value,
    headers: &[(&str, &str)],
) -> Response {
    let mut req = Request::post(path)
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT_ENCODING, "gzip, br");
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let req = req.body(Body::from(body.to_string())).unwrap();
    app.clone().oneshot(req).await.unwrap()
}

async fn scrape(app: &Router) -> prometheus::Scrape {
    let req = Request::get("/metrics").body(Body::empty()).unwrap();
    let res = app.clone().oneshot(req).await.unwrap();
    let text = res.into_body().collect().await.unwrap().to_bytes();
    prometheus::parse(std::str::from_utf8(&text).unwrap())
}

fn anthropic() -> serde_json::Value {
    json!({"model": "claude-x", "max_tokens": 64, "stream": true,
           "messages": [{"role": "user", "content": "hello"}]})
}

const TOKENS: &str = "condense_provider_tokens_total";

#[tokio::test]
async fn the_bill_is_counted_and_the_answer_is_the_providers_byte_for_byte() {
    let (url, seen) = provider().await;
    let app = condense(&url);

    let res = post_json(&app, "/v1/messages", anthropic()).await;
    assert_eq!(res.status(), 200);
    let got: Bytes = res.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(
        got,
        STREAM.as_bytes(),
        "the stream is relayed as it was sent"
    );
    let chat = json!({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]});
    let res = post_json(&app, "/v1/chat/completions", chat).await;
    let got = res.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(got, CHAT.as_bytes());

    // Asked for the answer as it is sent, so that its bill can be read.
    for h in seen.lock().unwrap().iter() {
        assert!(!h.contains_key(header::ACCEPT_ENCODING), "{h:?}");
    }
    let s = scrape(&app).await;
    let billed = |provider, kind| s.value(TOKENS, &[("provider", provider), ("kind", kind)]);
    // Anthropic: the start's input and cache, the last delta's output (not
    // the 999 a tool's input mentions).
    assert_eq!(billed("anthropic", "input"), 25.0);
    assert_eq!(billed("anthropic", "cache_read"), 90000.0);
    assert_eq!(billed("anthropic", "cache_write"), 3000.0);
    assert_eq!(billed("anthropic", "output"), 15.0);
    // OpenAI counts the cached part inside the prompt; it bills no writes.
    assert_eq!(billed("openai", "input"), 86.0);
    assert_eq!(billed("openai", "cache_read"), 1920.0);
    assert_eq!(billed("openai", "output"), 300.0);
    assert_eq!(s.matching(TOKENS, &[("kind", "cache_write")]).count(), 1);
}

#[tokio::test]
async fn a_client_that_leaves_mid_stream_still_counts_what_was_billed() {
    let (url, _) = provider().await;
    let app = condense(&url);
    let res = post_with(&app, "/v1/messages", anthropic(), &[("x-test-hang", "1")]).await;
    let mut body = res.into_body();
    // The first chunk carries message_start; the provider sends no more,
    // and the client goes.
    let first = body.frame().await.expect("a first chunk").unwrap();
    assert!(
        first
            .data_ref()
            .is_some_and(|d| d.starts_with(b"event: message_start"))
    );
    drop(body);
    let s = scrape(&app).await;
    let billed = |kind| s.value(TOKENS, &[("provider", "anthropic"), ("kind", kind)]);
    assert_eq!(billed("input"), 25.0);
    assert_eq!(billed("cache_read"), 90000.0);
    // Only the start's output was read: 1 token, not the 15 never sent.
    assert_eq!(billed("output"), 1.0);
}

#[tokio::test]
async fn every_turn_of_a_conversation_carries_its_name() {
    let (url, _) = provider().await;
    let app = condense(&url);
    let turn = |messages: serde_json::Value, session: &str| {
        json!({"model": "claude-x", "max_tokens": 64, "system": "be brief",
               "metadata": {"user_id": session}, "messages": messages})
    };
    let first = json!([{"role": "user", "content": "hello"}]);
    let second = json!([{"role": "user", "content": "hello"},
                        {"role": "assistant", "content": "hi"},
                        {"role": "user", "content": "go on"}]);
    let mut names = Vec::new();
    for (messages, session) in [(&first, "s1"), (&second, "s1"), (&first, "s2")] {
        let res = post_json(&app, "/v1/messages", turn(messages.clone(), session)).await;
        assert_eq!(res.status(), 200);
        let name = res.headers()["x-condense-conversation"].to_str().unwrap();
        assert!(
            name.len() == 32 && name.bytes().all(|b| b.is_ascii_hexdigit()),
            "{name}"
        );
        names.push(name.to_string());
    }
    assert_eq!(names[0], names[1], "one session, one name");
    assert_ne!(names[0], names[2], "another session, another name");
}
