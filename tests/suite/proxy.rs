//! The proxy's own behaviour, against a recording stub provider: what
//! reaches the provider (headers, body), what comes back, and every way
//! condense steps aside. (The official SDKs against the real local model
//! are in `proxy_sdk.rs`.)
use crate::support::responses::Settings;
use crate::support::{prometheus, server};

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Request, StatusCode, Uri, header};
use axum::response::IntoResponse;
use axum::routing::post;
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tower::ServiceExt;

/// What the stub provider received: the request target, headers and body.
#[derive(Clone, Default)]
struct Seen(Arc<Mutex<Vec<(Uri, HeaderMap, Bytes)>>>);

impl Seen {
    fn last(&self) -> (HeaderMap, Value) {
        let (_, h, b) = self.0.lock().unwrap().last().cloned().expect("a request");
        (h, serde_json::from_slice(&b).unwrap())
    }

    /// The path and query string of the last request.
    fn last_target(&self) -> String {
        let seen = self.0.lock().unwrap();
        let (uri, _, _) = seen.last().expect("a request");
        uri.path_and_query().unwrap().to_string()
    }
}

/// A provider that records requests and answers 200 (or `status`) with a
/// fixed body and a rate-limit header.
async fn provider(status: StatusCode) -> (String, Seen) {
    let headers = &[
        ("x-ratelimit-remaining-requests", "41"),
        ("connection", "close"),
    ];
    provider_answering(status, headers).await
}

/// A provider that records requests and answers `status` with a fixed body
/// and `answer_headers`, on every proxy route.
async fn provider_answering(
    status: StatusCode,
    answer_headers: &'static [(&'static str, &'static str)],
) -> (String, Seen) {
    let seen = Seen::default();
    let s = seen.clone();
    let answer = move |uri: Uri, headers: HeaderMap, body: Bytes| {
        let s = s.clone();
        async move {
            s.0.lock().unwrap().push((uri, headers, body));
            let mut res = (
                status,
                axum::Json(json!({"id": "x", "choices": [{"message": {"role": "assistant", "content": "ok"}}]})),
            )
                .into_response();
            for (k, v) in answer_headers {
                res.headers_mut().append(*k, v.parse().unwrap());
            }
            res
        }
    };
    let app = Router::new()
        .route("/v1/chat/completions", post(answer.clone()))
        .route("/v1/responses", post(answer.clone()))
        .route("/v1/responses/input_tokens", post(answer.clone()))
        .route("/v1/messages", post(answer.clone()))
        .route("/v1/messages/count_tokens", post(answer));
    let url = server::serve_router(app).await;
    (url, seen)
}

fn condense(config: condense::Config) -> Router {
    condense::http::router(condense::AppState::new(config).expect("state builds"))
}

fn with_provider(url: &str) -> condense::Config {
    condense::Config {
        proxy: condense::config::ProxySettings {
            openai_url: Some(format!("{url}/v1")),
            anthropic_url: Some(url.to_string()),
            ..Default::default()
        },
        ..Default::default()
    }
}

struct Reply {
    status: StatusCode,
    headers: HeaderMap,
    body: Value,
}

async fn send(app: &Router, path: &str, headers: &[(&str, &str)], body: &Value) -> Reply {
    let mut req = Request::post(path).header(header::CONTENT_TYPE, "application/json");
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let req = req
        .body(Body::from(serde_json::to_vec(body).unwrap()))
        .unwrap();
    let res = app.clone().oneshot(req).await.unwrap();
    let (status, headers) = (res.status(), res.headers().clone());
    let bytes = res.into_body().collect().await.unwrap().to_bytes();
    Reply {
        status,
        headers,
        body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    }
}

async fn scrape(app: &Router) -> prometheus::Scrape {
    let res = app
        .clone()
        .oneshot(Request::get("/metrics").body(Body::empty()).unwrap())
        .await
        .unwrap();
    let text = res.into_body().collect().await.unwrap().to_bytes();
    prometheus::parse(std::str::from_utf8(&text).unwrap())
}

fn chat(n: usize) -> Vec<Value> {
    let mut m = vec![json!({"role": "system", "content": "be brief"})];
    m.extend((0..n).map(|i| {
        let role = if i % 2 == 0 { "user" } else { "assistant" };
        json!({"role": role, "content": format!("message {i} about src/m{i}.rs")})
    }));
    m
}

#[tokio::test]
async fn routes_are_off_until_a_provider_is_set() {
    let app = condense(condense::Config::default());
    for (path, var) in [
        ("/v1/chat/completions", "CONDENSE_PROXY_OPENAI_URL"),
        ("/v1/responses", "CONDENSE_PROXY_OPENAI_URL"),
        ("/v1/responses/input_tokens", "CONDENSE_PROXY_OPENAI_URL"),
        ("/v1/messages", "CONDENSE_PROXY_ANTHROPIC_URL"),
        ("/v1/messages/count_tokens", "CONDENSE_PROXY_ANTHROPIC_URL"),
    ] {
        let r = send(&app, path, &[], &json!({"messages": chat(2)})).await;
        assert_eq!(r.status, 501);
        assert_eq!(r.body["type"], "urn:condense:problem:proxy-disabled");
        assert!(
            r.body["detail"].as_str().unwrap().contains(var),
            "{}",
            r.body
        );
    }
}

#[tokio::test]
async fn credentials_and_fields_pass_through_and_answers_come_back() {
    let (url, seen) = provider(StatusCode::OK).await;
    let app = condense(with_provider(&url));
    let body = json!({"model": "gpt-4o", "temperature": 0.25, "metadata": {"k": [1, 2]},
        "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
        "messages": chat(3)});
    let r = send(
        &app,
        "/v1/chat/completions",
        &[
            ("authorization", "Bearer sk-client"),
            ("openai-organization", "org-1"),
            ("openai-project", "proj-1"),
            ("x-condense-profile", "default"),
            ("connection", "keep-alive"),
        ],
        &body,
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body["choices"][0]["message"]["content"], "ok");
    assert_eq!(r.headers["x-ratelimit-remaining-requests"], "41");
    assert!(
        !r.headers.contains_key("connection"),
        "hop-by-hop stays behind"
    );
    assert_eq!(r.headers["x-condense-compressed"], "false");
    let (h, forwarded) = seen.last();
    assert_eq!(forwarded, body, "nothing due: the body, value for value");
    assert_eq!(h["authorization"], "Bearer sk-client");
    assert_eq!(h["openai-organization"], "org-1");
    assert_eq!(h["openai-project"], "proj-1");
    assert!(
        !h.contains_key("x-condense-profile"),
        "condense's headers stay here"
    );

    let r = send(
        &app,
        "/v1/messages",
        &[("x-api-key", "sk-ant"), ("anthropic-version", "2023-06-01"), ("anthropic-beta", "b1")],
        &json!({"model": "claude-sonnet-4-5", "max_tokens": 9, "system": "s", "messages": [{"role": "user", "content": "hi"}]}),
    )
    .await;
    assert_eq!(r.status, 200);
    let (h, forwarded) = seen.last();
    assert_eq!(h["x-api-key"], "sk-ant");
    assert_eq!(h["anthropic-version"], "2023-06-01");
    assert_eq!(h["anthropic-beta"], "b1");
    assert_eq!(forwarded["system"], "s");
}

#[tokio::test]
async fn provider_errors_pass_through_unchanged() {
    for status in [
        StatusCode::BAD_REQUEST,
        StatusCode::TOO_MANY_REQUESTS,
        StatusCode::INTERNAL_SERVER_ERROR,
    ] {
        let (url, _) = provider(status).await;
        let app = condense(with_provider(&url));
        let r = send(
            &app,
            "/v1/chat/completions",
            &[],
            &json!({"model": "gpt-4o", "messages": chat(2)}),
        )
        .await;
        assert_eq!(r.status, status);
        assert_eq!(r.body["id"], "x", "the provider's body");
    }
}

/// The new summary's fidelity receipt comes back as a header that adds up.
#[tokio::test]
async fn a_compressed_request_reports_its_fidelity() {
    let (url, _) = provider(StatusCode::OK).await;
    let app = condense(with_provider(&url));
    let body = json!({"model": "gpt-4o", "messages": chat(60)});
    let r = send(&app, "/v1/chat/completions", &[], &body).await;
    assert_eq!(r.headers["x-condense-compressed"], "true");
    let v = r.headers["x-condense-fidelity"].to_str().unwrap();
    let n: Vec<usize> = v
        .split(' ')
        .map(|kv| kv.split_once('=').unwrap().1.parse().unwrap())
        .collect();
    assert!(v.starts_with("anchors="), "{v}");
    assert_eq!(n[1] + n[2] + n[3], n[0], "kept + added + missing: {v}");
}

#[tokio::test]
async fn a_due_thread_is_compressed_and_shadow_mode_only_reports() {
    let (url, seen) = provider(StatusCode::OK).await;
    let app = condense(with_provider(&url));
    let body = json!({"model": "gpt-4o", "messages": chat(60)});
    let r = send(&app, "/v1/chat/completions", &[], &body).await;
    assert_eq!(r.headers["x-condense-compressed"], "true");
    let before: usize = r.headers["x-condense-tokens-before"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    let after: usize = r.headers["x-condense-tokens-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(after < before, "{after} < {before}");
    let (_, forwarded) = seen.last();
    let messages = forwarded["messages"].as_array().unwrap();
    assert!(messages.len() < 61);
    assert_eq!(
        messages[0], body["messages"][0],
        "the system prompt is pinned"
    );
    assert!(
        messages[1]["content"]
            .as_str()
            .unwrap()
            .starts_with("[Context Summary")
    );
    assert_eq!(forwarded["model"], "gpt-4o");

    let r = send(
        &app,
        "/v1/chat/completions",
        &[("x-condense-shadow", "true")],
        &body,
    )
    .await;
    assert_eq!(r.headers["x-condense-compressed"], "false");
    assert_eq!(r.headers["x-condense-shadow"], "true");
    assert_eq!(r.headers["x-condense-would-compress"], "true");
    assert_eq!(
        seen.last().1,
        body,
        "shadow mode forwards the request as it came"
    );
}

/// A plain summary that re-folds its previous one (its bound spent) says so
/// in `x-condense-note`, as `/v1/compress` says it in a warning: the
/// provider's prompt cache misses from there. One that appends, or a turn
/// that carries the previous summary on, says nothing.
#[tokio::test]
async fn a_plain_re_fold_is_noted() {
    let (url, seen) = provider(StatusCode::OK).await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("profiles.toml");
    std::fs::write(
        &file,
        "[profiles.tight]\nmax_messages_before_summary = 2\nmin_recent_messages = 2\n\
         max_summary_tokens = 400\nmax_payback_turns = 1000000\nmin_summary_gain = 0\n",
    )
    .unwrap();
    let db = format!(
        "sqlite://{}?mode=rwc",
        dir.path().join("c.sqlite3").display()
    );
    let cache = condense::cache::Cache::connect(&db, Default::default())
        .await
        .unwrap();
    let mut config = with_provider(&url);
    config.models.profiles_file = Some(file);
    let app = condense::http::router(condense::AppState::with_cache(config, cache).unwrap());
    let mut history = vec![json!({"role": "system", "content": "You are a coding agent."})];
    let (mut previous, mut appended, mut refolds) = (None::<String>, 0, 0);
    // The first request holds six turns, each next one a turn more; a summary
    // is due every other request.
    for i in 1..=80 {
        history.push(json!({"role": "user", "content": format!("Fix bug {i} in src/module_{i}.rs; never touch tests/case_{i}.rs.")}));
        history.push(json!({"role": "assistant", "content": format!("Bug {i} is fixed: the check in src/module_{i}.rs now runs before the cast, and release {i}.0.{i} notes it.")}));
        if i < 6 {
            continue;
        }
        let body = json!({"model": "gpt-4o", "messages": history});
        let r = send(
            &app,
            "/v1/chat/completions",
            &[("x-condense-profile", "tight")],
            &body,
        )
        .await;
        assert_eq!(r.status, StatusCode::OK);
        let note = r
            .headers
            .get("x-condense-note")
            .map(|v| v.to_str().unwrap().to_string());
        // A new summary, not the previous one carried on.
        if r.headers
            .get("x-condense-prefix-reused")
            .is_none_or(|v| v != "false")
        {
            assert_eq!(note, None, "turn {i}");
            continue;
        }
        let (_, forwarded) = seen.last();
        let summary = forwarded["messages"][1]["content"].as_str().unwrap();
        // Its text, after the `[Context Summary - N previous messages]` line.
        let (_, text) = summary.split_once('\n').unwrap();
        let text = text.trim().to_string();
        if let Some(before) = previous.replace(text.clone()) {
            let appends = text.starts_with(&before);
            let noted = note
                .as_deref()
                .is_some_and(|n| n.contains("forced a re-fold"));
            assert_eq!(
                noted, !appends,
                "turn {i}: {note:?}\n{before}\n----\n{text}"
            );
            appended += usize::from(appends);
            refolds += usize::from(!appends);
        }
    }
    // Measured: 33 appended, 4 re-folded. (At 300 tokens every new summary
    // re-folds: two turns say more than half the bound.)
    println!("plain through the proxy, 400 tokens: appended {appended}, re-folded {refolds}");
    assert!(refolds >= 1, "the bound was reached");
    assert!(
        appended > refolds,
        "{appended} appended, {refolds} re-folded"
    );
}

#[tokio::test]
async fn what_condense_cannot_handle_goes_through_unchanged() {
    let (url, seen) = provider(StatusCode::OK).await;
    let app = condense(with_provider(&url));
    // An orphaned tool result: the provider decides, not condense.
    let odd = json!({"model": "gpt-4o", "messages": [{"role": "tool", "tool_call_id": "nope", "content": "x"}]});
    let r = send(&app, "/v1/chat/completions", &[], &odd).await;
    assert_eq!(r.status, 200);
    assert_eq!(seen.last().1, odd);
    assert!(r.headers.contains_key("x-condense-note"));
    let r = send(
        &app,
        "/v1/chat/completions",
        &[("x-condense-profile", "nope")],
        &json!({"messages": chat(2)}),
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.headers["x-condense-note"], "unknown x-condense-profile");
    // A provider that is not there: a clear 502, without its address.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let app = condense(with_provider(&format!("http://127.0.0.1:{port}")));
    let r = send(
        &app,
        "/v1/chat/completions",
        &[],
        &json!({"messages": chat(2)}),
    )
    .await;
    assert_eq!(r.status, 502);
    assert_eq!(r.body["type"], "urn:condense:problem:provider-unreachable");
    assert!(
        !r.body["detail"]
            .as_str()
            .unwrap()
            .contains(&port.to_string())
    );
}

#[tokio::test]
async fn the_operator_key_fills_in_only_when_the_client_sends_none() {
    let (url, seen) = provider(StatusCode::OK).await;
    let app = condense({
        let mut config = with_provider(&url);
        config.proxy.api_key = condense::upstream::Secret::new("sk-operator");
        config
    });
    send(
        &app,
        "/v1/chat/completions",
        &[],
        &json!({"messages": chat(2)}),
    )
    .await;
    assert_eq!(seen.last().0["authorization"], "Bearer sk-operator");
    send(
        &app,
        "/v1/chat/completions",
        &[("authorization", "Bearer sk-own")],
        &json!({"messages": chat(2)}),
    )
    .await;
    assert_eq!(seen.last().0["authorization"], "Bearer sk-own");
    send(
        &app,
        "/v1/messages",
        &[],
        &json!({"model": "claude-sonnet-4-5", "messages": [{"role": "user", "content": "hi"}]}),
    )
    .await;
    assert_eq!(seen.last().0["x-api-key"], "sk-operator");
}

#[tokio::test]
async fn forwarded_requests_are_counted_by_provider_and_status() {
    let (ok, _) = provider(StatusCode::OK).await;
    let (busy, _) = provider(StatusCode::TOO_MANY_REQUESTS).await;
    let app = condense(condense::Config {
        proxy: condense::config::ProxySettings {
            openai_url: Some(format!("{ok}/v1")),
            anthropic_url: Some(busy),
            ..Default::default()
        },
        ..Default::default()
    });
    for _ in 0..2 {
        let r = send(
            &app,
            "/v1/chat/completions",
            &[],
            &json!({"model": "gpt-4o", "messages": chat(2)}),
        )
        .await;
        assert_eq!(r.status, 200);
    }
    let anthropic = json!({"model": "claude-sonnet-4-5", "max_tokens": 16,
                           "messages": [{"role": "user", "content": "hello"}]});
    assert_eq!(
        send(&app, "/v1/messages", &[], &anthropic).await.status,
        429
    );

    let s = scrape(&app).await;
    let forwarded = "condense_proxy_forwarded_requests_total";
    assert_eq!(
        s.value(forwarded, &[("provider", "openai"), ("status", "200")]),
        2.0
    );
    assert_eq!(
        s.value(forwarded, &[("provider", "anthropic"), ("status", "429")]),
        1.0
    );
    assert_eq!(s.matching(forwarded, &[]).count(), 2);
    let requests = "condense_http_requests_total";
    assert_eq!(
        s.value(
            requests,
            &[("route", "/v1/chat/completions"), ("status", "200")]
        ),
        2.0
    );
    assert_eq!(
        s.value(requests, &[("route", "/v1/messages"), ("status", "429")]),
        1.0
    );
    // The provider's 429 is relayed, not a problem of condense's own.
    assert_eq!(s.matching("condense_problems_total", &[]).count(), 0);
}

/// A provider that redirects every request to `target` (same path).
async fn redirecting_provider(target: &str) -> String {
    let target = target.to_string();
    let app = Router::new().fallback(move |uri: axum::http::Uri| {
        let target = target.clone();
        async move {
            (
                StatusCode::TEMPORARY_REDIRECT,
                [("location", format!("{target}{}", uri.path()))],
            )
        }
    });
    server::serve_router(app).await
}

#[tokio::test]
async fn a_provider_redirect_goes_back_to_the_caller_and_the_keys_stay_home() {
    let (elsewhere, seen) = provider(StatusCode::OK).await;
    let redirect = redirecting_provider(&elsewhere).await;
    let app = condense({
        let mut config = with_provider(&redirect);
        config.proxy.api_key = condense::upstream::Secret::new("sk-operator");
        config
    });
    let anthropic =
        json!({"model": "claude-sonnet-4-5", "messages": [{"role": "user", "content": "hi"}]});
    for (path, headers, body) in [
        ("/v1/messages", vec![], &anthropic),
        ("/v1/messages", vec![("x-api-key", "sk-client")], &anthropic),
        (
            "/v1/chat/completions",
            vec![],
            &json!({"messages": chat(2)}),
        ),
    ] {
        let r = send(&app, path, &headers, body).await;
        assert_eq!(r.status, StatusCode::TEMPORARY_REDIRECT, "{path}");
        let location = r.headers["location"].to_str().unwrap();
        assert!(location.starts_with(&elsewhere), "{location}");
    }
    assert!(
        seen.0.lock().unwrap().is_empty(),
        "the redirect target got a request (with its credentials)"
    );
}

/// A Responses thread of `n` rounds: a question, a reasoning item, a call
/// and its output.
fn response_items(n: usize) -> Vec<Value> {
    let mut items = Vec::new();
    for i in 0..n {
        items.push(json!({"role": "user", "content": format!("step {i}: read src/m{i}.rs")}));
        items.push(json!({"type": "reasoning", "id": format!("rs_{i}"), "summary": [], "encrypted_content": format!("gAAAA{i}")}));
        items.push(json!({"type": "function_call", "call_id": format!("c{i}"), "name": "read", "arguments": "{}"}));
        items.push(json!({"type": "function_call_output", "call_id": format!("c{i}"), "output": format!("fn m{i}() {{}}")}));
    }
    items
}

#[tokio::test]
async fn the_responses_route_compresses_input_and_keeps_everything_else() {
    let (url, seen) = provider(StatusCode::OK).await;
    let app = condense(with_provider(&url));
    let body = json!({"model": "gpt-4o", "instructions": "be brief", "store": false,
        "reasoning": {"effort": "low"}, "input": response_items(20)});
    let r = send(
        &app,
        "/v1/responses",
        &[("authorization", "Bearer sk-client")],
        &body,
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.headers["x-condense-compressed"], "true");
    let (h, forwarded) = seen.last();
    assert_eq!(h["authorization"], "Bearer sk-client");
    for key in ["model", "instructions", "store", "reasoning"] {
        assert_eq!(forwarded[key], body[key], "{key} passes through");
    }
    let items = forwarded["input"].as_array().unwrap();
    assert!(
        items[0]["content"]
            .as_str()
            .unwrap()
            .starts_with("[Context Summary - ")
    );
    assert!(items.len() < 80);
    // The newest items as sent, but for their reasoning: the summary
    // before them changed its prefix, and OpenAI would drop it.
    let sent = body["input"].as_array().unwrap();
    let tail = &items[1..];
    let mut from = sent.len();
    while sent[from..]
        .iter()
        .filter(|i| i["type"] != "reasoning")
        .count()
        < tail.len()
    {
        from -= 1;
    }
    // The unit's own reasoning, before its call, goes too.
    while from > 0 && sent[from - 1]["type"] == "reasoning" {
        from -= 1;
    }
    let (expected, stale): (Vec<&Value>, Vec<&Value>) =
        sent[from..].iter().partition(|i| i["type"] != "reasoning");
    assert_eq!(tail.iter().collect::<Vec<_>>(), expected);
    assert!(!stale.is_empty());
    assert_eq!(
        r.headers["x-condense-thinking"],
        format!("removed={}", stale.len())
    );

    // What condense does not compress goes through as it came, with a note.
    for (odd, note) in [
        (
            json!({"model": "gpt-4o", "previous_response_id": "resp_1", "input": response_items(20)}),
            "previous_response_id",
        ),
        (
            json!({"model": "gpt-4o", "input": "hello"}),
            "single message",
        ),
    ] {
        let r = send(&app, "/v1/responses", &[], &odd).await;
        assert_eq!(r.status, 200);
        assert_eq!(seen.last().1, odd);
        let got = r.headers["x-condense-note"].to_str().unwrap();
        assert!(got.contains(note), "{got}");
    }
}

/// A profile's `clear` applies to proxied requests too: old tool results
/// reach the provider as placeholders, every message in its place.
/// OpenAI's settings items and its compaction items through the proxy, as
/// on `/v1/compress` (`api::responses`): what precedes a provider
/// compaction item, and the settings right after it, go first and
/// verbatim; the summarized span's settings (`configuration_update`,
/// `additional_tools`) right after the summary, in order, verbatim; the
/// `compaction_trigger` stays the final item.
#[tokio::test]
async fn the_responses_route_keeps_settings_compaction_and_trigger_items_in_place() {
    let (url, seen) = provider(StatusCode::OK).await;
    let app = condense(with_provider(&url));
    let Settings {
        input,
        config,
        tools,
        trigger,
    } = Settings::new(&[], 39);
    let body = json!({"model": "gpt-4o", "input": input});
    let r = send(
        &app,
        "/v1/responses",
        &[("authorization", "Bearer sk-client")],
        &body,
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.headers["x-condense-compressed"], "true");
    let (_, forwarded) = seen.last();
    let out = forwarded["input"].as_array().unwrap();
    assert_eq!(&out[..6], &input[..6]);
    assert!(
        out[6]["content"]
            .as_str()
            .unwrap()
            .starts_with("[Context Summary - ")
    );
    assert_eq!(out[7..9], [config, tools]);
    // The tail as sent, in order, but for the reasoning OpenAI would drop
    // (reported) and the ids of the items it produced.
    let bare = |i: &Value| {
        let mut i = i.clone();
        i.as_object_mut().unwrap().remove("id");
        i
    };
    let sent: Vec<Value> = input
        .iter()
        .filter(|i| i["type"] != "reasoning")
        .map(bare)
        .collect();
    let tail: Vec<Value> = out[9..].iter().map(bare).collect();
    assert!(tail.len() >= 3, "{tail:?}");
    assert_eq!(tail[..], sent[sent.len() - tail.len()..]);
    assert_eq!(out.last(), Some(&trigger));
    assert!(
        r.headers["x-condense-thinking"]
            .to_str()
            .unwrap()
            .starts_with("removed=")
    );
}

#[tokio::test]
async fn a_profile_with_clear_clears_old_tool_results_on_the_way() {
    let (url, seen) = provider(StatusCode::OK).await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("profiles.toml");
    std::fs::write(
        &file,
        "[profiles.agent.clear]\nkeep = 1\ntrigger = { tool_uses = 2 }\n",
    )
    .unwrap();
    let app = condense({
        let mut config = with_provider(&url);
        config.models.profiles_file = Some(file);
        config
    });
    let mut messages = vec![json!({"role": "user", "content": "look around"})];
    for i in 0..3 {
        messages.push(json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": format!("c{i}"), "type": "function", "function": {"name": "bash", "arguments": "{\"command\": \"ls\"}"}}]}));
        messages.push(json!({"role": "tool", "tool_call_id": format!("c{i}"), "content": "file.rs\n".repeat(200)}));
    }
    let body = json!({"model": "gpt-4o", "messages": messages});
    let r = send(
        &app,
        "/v1/chat/completions",
        &[("x-condense-profile", "agent")],
        &body,
    )
    .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.headers["x-condense-compressed"], "true");
    let (_, forwarded) = seen.last();
    let sent = forwarded["messages"].as_array().unwrap();
    assert_eq!(sent.len(), messages.len());
    for i in [2, 4] {
        assert_eq!(
            sent[i]["content"],
            "[condense cleared this bash result: 1,600 characters]"
        );
    }
    assert_eq!(sent[6], messages[6], "the newest tool use is kept");
}

/// An Anthropic thread of `n` messages, a user's first.
fn anthropic_chat(n: usize) -> Vec<Value> {
    (0..n)
        .map(|i| {
            let role = if i % 2 == 0 { "user" } else { "assistant" };
            json!({"role": role, "content": format!("message {i} about src/m{i}.rs")})
        })
        .collect()
}

/// The client's query string goes to the provider as it came, on every
/// route, whether the thread was compressed or not.
#[tokio::test]
async fn the_query_string_reaches_the_provider_as_it_came() {
    let (url, seen) = provider(StatusCode::OK).await;
    let app = condense(with_provider(&url));
    let anthropic =
        json!({"model": "claude-sonnet-4-5", "max_tokens": 9, "messages": anthropic_chat(2)});
    let openai = json!({"model": "gpt-4o", "messages": chat(2)});
    let responses = json!({"model": "gpt-4o", "input": response_items(1)});
    for (target, body) in [
        ("/v1/messages?beta=true", &anthropic),
        ("/v1/messages/count_tokens?beta=true&x=a%20b", &anthropic),
        ("/v1/chat/completions?api-version=2024-10-21", &openai),
        ("/v1/responses?api-version=2025-04-01-preview", &responses),
        ("/v1/responses/input_tokens?beta=true", &responses),
        ("/v1/messages", &anthropic),
        ("/v1/chat/completions", &openai),
    ] {
        let r = send(&app, target, &[], body).await;
        assert_eq!(r.status, 200, "{target}");
        assert_eq!(seen.last_target(), target);
    }
    let due = json!({"model": "gpt-4o", "messages": chat(60)});
    let r = send(&app, "/v1/chat/completions?api-version=1", &[], &due).await;
    assert_eq!(r.headers["x-condense-compressed"], "true");
    assert_eq!(seen.last_target(), "/v1/chat/completions?api-version=1");
}

/// The counting routes prepare a body as the routes that generate do (a
/// count body has no `max_tokens` nor `stream`): the provider counts the
/// very thread condense then forwards for the same history.
#[tokio::test]
async fn the_counting_routes_count_what_condense_would_forward() {
    let (url, seen) = provider(StatusCode::OK).await;
    let app = condense(with_provider(&url));
    let count = json!({"model": "claude-sonnet-4-5", "system": "be brief",
                       "messages": anthropic_chat(60)});
    let r = send(
        &app,
        "/v1/messages/count_tokens",
        &[("x-api-key", "sk-ant"), ("anthropic-version", "2023-06-01")],
        &count,
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.headers["x-condense-compressed"], "true");
    assert_eq!(seen.last_target(), "/v1/messages/count_tokens");
    let (h, counted) = seen.last();
    assert_eq!(h["x-api-key"], "sk-ant");
    assert_eq!(counted["system"], "be brief");
    assert!(counted["messages"].as_array().unwrap().len() < 60);
    let mut create = count.clone();
    create["max_tokens"] = json!(64);
    send(&app, "/v1/messages", &[], &create).await;
    let (_, sent) = seen.last();
    assert_eq!(sent["messages"], counted["messages"], "counted as sent");

    let count = json!({"model": "gpt-4o", "instructions": "be brief", "input": response_items(20)});
    let r = send(&app, "/v1/responses/input_tokens", &[], &count).await;
    assert_eq!(r.headers["x-condense-compressed"], "true");
    assert_eq!(seen.last_target(), "/v1/responses/input_tokens");
    let (_, counted) = seen.last();
    assert!(counted["input"].as_array().unwrap().len() < 80);
    send(&app, "/v1/responses", &[], &count).await;
    assert_eq!(seen.last().1["input"], counted["input"], "counted as sent");

    // The profile header counts there too.
    let r = send(
        &app,
        "/v1/messages/count_tokens",
        &[("x-condense-profile", "nope")],
        &count,
    )
    .await;
    assert_eq!(r.headers["x-condense-note"], "unknown x-condense-profile");
    assert_eq!(seen.last().1, count);
}

/// Each request forwarded unchanged because of a problem on condense's
/// side is counted by provider and reason, its note still in the header;
/// one condense has nothing to do for is not a problem.
#[tokio::test]
async fn requests_forwarded_unchanged_are_counted_by_reason() {
    let (url, seen) = provider(StatusCode::OK).await;
    let state = condense::AppState::new({
        let mut config = with_provider(&url);
        config.limits.max_concurrency = 1;
        config
    })
    .expect("state builds");
    let app = condense::http::router(state.clone());
    let orphan = json!({"model": "gpt-4o",
                        "messages": [{"role": "tool", "tool_call_id": "nope", "content": "x"}]});
    for _ in 0..2 {
        let r = send(&app, "/v1/chat/completions", &[], &orphan).await;
        assert_eq!(r.status, 200);
        assert_eq!(
            r.headers["x-condense-note"],
            "the thread is not one condense can read"
        );
        assert_eq!(seen.last().1, orphan);
    }
    let anthropic = json!({"model": "claude-sonnet-4-5", "messages": anthropic_chat(2)});
    let r = send(
        &app,
        "/v1/messages/count_tokens",
        &[("x-condense-profile", "nope")],
        &anthropic,
    )
    .await;
    assert!(r.headers.contains_key("x-condense-note"));
    let place = state.overload.try_enter(0).expect("the one place");
    let r = send(&app, "/v1/messages", &[], &anthropic).await;
    assert_eq!(r.status, 200);
    let note = r.headers["x-condense-note"].to_str().unwrap();
    assert!(note.contains("concurrency limit"), "{note}");
    drop(place);
    let kept =
        json!({"model": "gpt-4o", "previous_response_id": "resp_1", "input": response_items(2)});
    let r = send(&app, "/v1/responses", &[], &kept).await;
    assert!(r.headers.contains_key("x-condense-note"));

    let s = scrape(&app).await;
    let unchanged = "condense_proxy_unchanged_requests_total";
    for (provider, reason, n) in [
        ("openai", "unreadable", 2.0),
        ("anthropic", "unknown_profile", 1.0),
        ("anthropic", "overloaded", 1.0),
    ] {
        let labels = [("provider", provider), ("reason", reason)];
        assert_eq!(s.value(unchanged, &labels), n, "{provider} {reason}");
    }
    assert_eq!(s.matching(unchanged, &[]).count(), 3, "nothing else");
}

/// RFC 9110 §7.6.1 both ways (a header a `Connection` lists is of one hop),
/// the client's cookies and forwarding chain stay here, the answer's
/// `x-request-id` is condense's (the provider's goes back under another
/// name), and a provider cannot speak as condense.
#[tokio::test]
async fn headers_cross_the_proxy_as_a_proxy_should() {
    // Headers a proxy must not pass on as they are: the provider's own
    // request id, a made-up `x-condense-*`, a header its `Connection` names.
    let (url, seen) = provider_answering(
        StatusCode::OK,
        &[
            ("x-request-id", "prov-1"),
            ("request-id", "req_1"),
            ("x-condense-compressed", "evil"),
            ("connection", "x-secret"),
            ("x-secret", "1"),
        ],
    )
    .await;
    let app = condense(with_provider(&url));
    let r = send(
        &app,
        "/v1/messages",
        &[
            ("x-api-key", "sk-ant"),
            ("cookie", "session=1"),
            ("connection", "x-private"),
            ("x-private", "1"),
            ("x-forwarded-for", "10.1.2.3"),
            ("forwarded", "for=10.1.2.3"),
            ("x-request-id", "client-7"),
        ],
        &json!({"model": "m", "max_tokens": 9, "messages": [{"role": "user", "content": "hi"}]}),
    )
    .await;
    assert_eq!(r.status, 200);
    let (h, _) = seen.last();
    assert_eq!(h["x-api-key"], "sk-ant");
    assert_eq!(h["x-request-id"], "client-7", "the request id goes along");
    for gone in ["cookie", "x-private", "x-forwarded-for", "forwarded"] {
        assert!(!h.contains_key(gone), "{gone} reached the provider");
    }
    assert_eq!(r.headers["x-provider-request-id"], "prov-1");
    assert_eq!(r.headers["request-id"], "req_1");
    assert_ne!(
        r.headers.get("x-request-id").map(|v| v.as_bytes()),
        Some(&b"prov-1"[..])
    );
    assert_eq!(r.headers["x-condense-compressed"], "false");
    assert_eq!(r.headers.get_all("x-condense-compressed").iter().count(), 1);
    assert!(!r.headers.contains_key("x-secret"));
    assert!(!r.headers.contains_key("connection"));
}

#[tokio::test]
async fn a_rewritten_body_keeps_its_numbers_as_written() {
    // Written as text: `json!` would make numbers of Rust literals. serde_json
    // spells an exponent `e+5` (`1e5` goes `1e+5`, the same value); all else
    // is byte for byte (issue 38).
    let written = "[123456789012345678901234567890, -1e400, 1.10, 1e5, 0.1, -0, 7]";
    let forwarded = "[123456789012345678901234567890,-1e+400,1.10,1e+5,0.1,-0,7]";
    let (url, seen) = provider(StatusCode::OK).await;
    let app = condense(with_provider(&url));
    let mut messages: Vec<String> = chat(60).iter().map(Value::to_string).collect();
    messages.push(format!(
        r#"{{"role": "user", "content": "the readings", "metadata": {{"n": {written}}}}}"#
    ));
    let body = format!(
        r#"{{"model": "gpt-4o", "temperature": 0.70, "seed": 12345678901234567890123, "messages": [{}]}}"#,
        messages.join(", ")
    );
    let req = Request::post("/v1/chat/completions")
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body))
        .unwrap();
    let res = app.clone().oneshot(req).await.unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(res.headers()["x-condense-compressed"], "true");
    let (_, _, sent) = seen.0.lock().unwrap().last().cloned().expect("a request");
    let sent = String::from_utf8(sent.to_vec()).unwrap();
    for kept in [
        r#""temperature":0.70"#,
        r#""seed":12345678901234567890123"#,
        &format!(r#""metadata":{{"n":{forwarded}}}"#),
    ] {
        assert!(sent.contains(kept), "{kept} in {sent}");
    }
}
