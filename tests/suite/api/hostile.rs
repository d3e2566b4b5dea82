//! Inputs built to make condense work or talk too much: bodies of a million
//! mistakes, megabyte-long names quoted back, request ids that forge log
//! lines, compressed bodies, and callers fishing for configuration.

use axum::body::Body;
use axum::http::{Request, header};
use serde_json::{Value, json};

use crate::support::common::{app, app_with, post, send};
use crate::support::stub::{self, Fault};

/// A value far longer than any error may quote.
fn long() -> String {
    "Z".repeat(100_000)
}

/// The answer quotes at most a short prefix of [`long`].
fn assert_clipped(what: &str, bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    assert!(
        !text.contains(&"Z".repeat(65)),
        "{what}: the long value is quoted whole ({} bytes)",
        text.len()
    );
    assert!(text.len() < 4096, "{what}: {} bytes", text.len());
}

#[tokio::test]
async fn a_million_mistakes_get_a_short_answer() {
    // 900,000 messages that are not objects, in under 2 MB, with the
    // message limit lifted (by default the count alone is a 413).
    let body = format!("{{\"messages\": [{}1]}}", "1,".repeat(899_999));
    let unlimited = crate::support::common::app_with(condense::Config {
        limits: condense::config::LimitSettings {
            max_messages: 0,
            ..Default::default()
        },
        ..Default::default()
    });
    let r =
        crate::support::common::post_raw(&unlimited, "/v1/tokens", "application/json", body).await;
    let p = r.problem(422);
    let errors = p["errors"].as_array().unwrap();
    assert_eq!(errors.len(), condense::thread::MAX_ERRORS + 1);
    assert_eq!(errors[0]["pointer"], "/messages/0");
    assert_eq!(
        errors.last().unwrap()["message"],
        format!("+{} more errors", 900_000 - condense::thread::MAX_ERRORS)
    );
    assert!(r.bytes.len() < 64 * 1024, "{} bytes", r.bytes.len());
}

#[tokio::test]
async fn every_kind_of_error_list_is_capped() {
    let roles: Vec<Value> = (0..500)
        .map(|_| json!({"role": "nobody", "content": "x"}))
        .collect();
    let orphans: Vec<Value> = (0..500)
        .map(|i| json!({"role": "tool", "tool_call_id": format!("c{i}"), "content": "x"}))
        .collect();
    let blocks: Vec<Value> = (0..500).map(|_| json!({"type": "nothing"})).collect();
    let cases = [
        json!({"messages": roles}),
        json!({"messages": orphans}),
        json!({"format": "anthropic", "messages": [{"role": "user", "content": blocks}]}),
    ];
    for body in cases {
        for path in ["/v1/tokens", "/v1/verdict", "/v1/compress"] {
            let r = post(&app(), path, &body).await;
            let errors = r.problem(422)["errors"].as_array().unwrap().clone();
            assert_eq!(errors.len(), condense::thread::MAX_ERRORS + 1, "{path}");
            assert_eq!(errors.last().unwrap()["message"], "+400 more errors");
        }
    }
}

#[tokio::test]
async fn quoted_input_is_cut_to_a_prefix_everywhere() {
    let z = long();
    let call = |id: &str| json!({"id": id, "type": "function", "function": {"name": "f", "arguments": "{}"}});
    let cases: Vec<(&str, &str, Value)> = vec![
        (
            "openai role",
            "/v1/tokens",
            json!({"messages": [{"role": z, "content": "x"}]}),
        ),
        (
            "openai part type",
            "/v1/tokens",
            json!({"messages": [{"role": "user", "content": [{"type": z}]}]}),
        ),
        (
            "tool call type",
            "/v1/tokens",
            json!({"messages": [{"role": "assistant", "content": null,
            "tool_calls": [{"id": "a", "type": z, "function": {"name": "f", "arguments": "{}"}}]}]}),
        ),
        (
            "anthropic role",
            "/v1/tokens",
            json!({"format": "anthropic", "messages": [{"role": z, "content": "x"}]}),
        ),
        (
            "anthropic block type",
            "/v1/tokens",
            json!({"format": "anthropic", "messages": [{"role": "user", "content": [{"type": z}]}]}),
        ),
        (
            "orphan result id",
            "/v1/tokens",
            json!({"messages": [{"role": "user", "content": "x"},
            {"role": "tool", "tool_call_id": z, "content": "x"}]}),
        ),
        (
            "duplicate call id",
            "/v1/verdict",
            json!({"messages": [
            {"role": "assistant", "content": null, "tool_calls": [call(&z)]},
            {"role": "tool", "tool_call_id": z, "content": "x"},
            {"role": "assistant", "content": null, "tool_calls": [call(&z)]}]}),
        ),
        (
            "unanswered call id",
            "/v1/compress",
            json!({"messages": [
            {"role": "assistant", "content": null, "tool_calls": [call(&z)]},
            {"role": "user", "content": "x"}]}),
        ),
        (
            "unknown field",
            "/v1/tokens",
            json!({"text": "x", z.clone(): 1}),
        ),
        (
            "unknown config field",
            "/v1/compress",
            json!({"messages": [], "config": {z.clone(): 1}}),
        ),
        (
            "unknown variant",
            "/v1/tokens",
            json!({"text": "x", "method": z}),
        ),
        (
            "unknown encoding",
            "/v1/tokens",
            json!({"text": "x", "encoding": z}),
        ),
        (
            "wrong type",
            "/v1/tokens",
            json!({"text": "x", "chars_per_token": z}),
        ),
        (
            "unknown profile",
            "/v1/verdict",
            json!({"messages": [], "profile": z}),
        ),
        (
            "unknown model warning",
            "/v1/verdict",
            json!({"messages": [{"role": "user", "content": "x"}], "model": z}),
        ),
        (
            "ignored summarizer model",
            "/v1/compress",
            json!({"messages": [{"role": "user", "content": "x"}],
            "summarizer": {"model": z}}),
        ),
    ];
    for (what, path, body) in cases {
        let r = post(&app(), path, &body).await;
        if r.status.is_success() {
            // Answered: the warnings quote the name (the `model` field
            // says, once, what the caller asked for).
            let warnings = r.json()["warnings"].to_string();
            assert!(warnings.contains("ZZZ"), "{what}: no warning names it");
            assert_clipped(what, warnings.as_bytes());
        } else {
            assert!(r.status.is_client_error(), "{what}: {}", r.status);
            assert_clipped(what, &r.bytes);
        }
    }
    let r = crate::support::common::get(&app(), &format!("/{}", "Z".repeat(10_000))).await;
    r.problem(404);
    assert_clipped("unknown path", &r.bytes);
    let r = crate::support::common::get(
        &app(),
        &format!("/playground/examples/{}", "Z".repeat(10_000)),
    )
    .await;
    r.problem(404);
    assert_clipped("unknown example", &r.bytes);
    let r = crate::support::common::post_raw(
        &app(),
        "/v1/tokens",
        &format!("application/{}", "Z".repeat(10_000)),
        "{}",
    )
    .await;
    r.problem(415);
    assert_clipped("content type", &r.bytes);
    let req = Request::post("/v1/tokens")
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::CONTENT_ENCODING, "Z".repeat(10_000))
        .body(Body::from("{}"))
        .unwrap();
    let r = send(&app(), req).await;
    r.problem(415);
    assert_clipped("content encoding", &r.bytes);
}

#[tokio::test]
async fn the_model_answer_names_neither_the_allow_list_nor_the_long_name() {
    let s = stub::start(Fault::Ok, false).await;
    let app = app_with(condense::Config {
        upstream: condense::config::UpstreamSettings {
            url: Some(s.url.clone()),
            model: "house-model-7".into(),
            allowed_models: vec!["private-finetune-3".into()],
            ..Default::default()
        },
        ..Default::default()
    });
    for asked in ["not-allowed".to_string(), long()] {
        let body = json!({"messages": crate::support::common::chat(12), "force": true,
            "summarizer": {"strategy": "llm", "model": asked}});
        let r = post(&app, "/v1/compress", &body).await;
        assert_eq!(r.pointers(), ["/summarizer/model"]);
        let text = r.text();
        assert!(!text.contains("private-finetune-3"), "{text}");
        assert!(!text.contains("house-model-7"), "{text}");
        assert_clipped("model", &r.bytes);
    }
    assert_eq!(s.calls(), 0);
}

fn with_request_id(id: &[u8]) -> Request<Body> {
    Request::get("/healthz")
        .header(
            "x-request-id",
            axum::http::HeaderValue::from_bytes(id).unwrap(),
        )
        .body(Body::empty())
        .unwrap()
}

fn answered_id(r: &crate::support::common::Reply) -> String {
    let ids: Vec<_> = r.headers.get_all("x-request-id").iter().collect();
    assert_eq!(ids.len(), 1, "{ids:?}");
    ids[0].to_str().unwrap().to_string()
}

#[tokio::test]
async fn a_short_visible_request_id_is_kept() {
    let max = "a".repeat(64);
    for id in ["abc-123", "req_01HZX:42/7+x=y@z", "x", max.as_str()] {
        let r = send(&app(), with_request_id(id.as_bytes())).await;
        assert_eq!(answered_id(&r), id);
    }
}

#[tokio::test]
async fn any_other_request_id_is_replaced_by_a_new_one() {
    let too_long = "a".repeat(65);
    let sixty_kb = "b".repeat(60_000);
    let bad: [&[u8]; 8] = [
        b"a\tb",
        b"id\" level=\"ERROR",
        b"two words",
        b"back\\slash",
        b"",
        too_long.as_bytes(),
        sixty_kb.as_bytes(),
        "caf\u{e9}".as_bytes(),
    ];
    for id in bad {
        let r = send(&app(), with_request_id(id)).await;
        let got = answered_id(&r);
        assert_ne!(got.as_bytes(), id);
        uuid::Uuid::parse_str(&got).unwrap_or_else(|e| panic!("{got:?}: {e}"));
    }
    let two = Request::get("/healthz")
        .header("x-request-id", "one")
        .header("x-request-id", "two")
        .body(Body::empty())
        .unwrap();
    let r = send(&app(), two).await;
    uuid::Uuid::parse_str(&answered_id(&r)).expect("a new id for an ambiguous pair");
}

#[tokio::test]
async fn an_encoded_body_is_refused_on_every_route_that_reads_one() {
    let openai = stub::start(Fault::Ok, false).await;
    let anthropic = stub::start(Fault::Ok, true).await;
    let app = app_with(condense::Config {
        proxy: condense::config::ProxySettings {
            openai_url: Some(openai.url.clone()),
            anthropic_url: Some(anthropic.url.clone()),
            ..Default::default()
        },
        ..Default::default()
    });
    let thread = json!({"messages": [{"role": "user", "content": "hi"}]});
    let provider_request = json!({"model": "m", "max_tokens": 5,
        "messages": [{"role": "user", "content": "hi"}]});
    for (path, body) in [
        ("/v1/tokens", &thread),
        ("/v1/verdict", &thread),
        ("/v1/compress", &thread),
        ("/v1/chat/completions", &provider_request),
        ("/v1/messages", &provider_request),
    ] {
        let with = |encoding: &str| {
            Request::post(path)
                .header(header::CONTENT_TYPE, "application/json")
                .header(header::CONTENT_ENCODING, encoding)
                .body(Body::from(serde_json::to_vec(body).unwrap()))
                .unwrap()
        };
        for encoding in ["gzip", "br", "deflate, identity", "x-unknown"] {
            let r = send(&app, with(encoding)).await;
            let p = r.problem(415);
            assert_eq!(p["type"], "urn:condense:problem:unsupported-media-type");
            assert!(
                p["detail"].as_str().unwrap().contains("Content-Encoding"),
                "{path}: {p}"
            );
            assert_eq!(r.headers["accept-encoding"], "identity");
        }
        let r = send(&app, with("identity")).await;
        assert_eq!(
            r.status,
            200,
            "{path}: identity is no encoding: {}",
            r.text()
        );
    }
    // Only the identity requests were forwarded.
    assert_eq!((openai.calls(), anthropic.calls()), (1, 1));
}

/// A model name of megabytes is a 422 naming `/model`, not an echo in a
/// 200; a long real one (256 characters) is still answered.
#[tokio::test]
async fn a_huge_model_name_is_refused_not_echoed() {
    let app = app();
    let thread = json!([{"role": "user", "content": "hi"}]);
    for path in ["/v1/tokens", "/v1/verdict", "/v1/compress"] {
        let r = post(&app, path, &json!({"model": long(), "messages": thread})).await;
        let p = r.problem(422);
        assert_eq!(p["errors"][0]["pointer"], "/model", "{path}: {p}");
        assert_clipped(path, r.text().as_bytes());
        let fine = "m".repeat(condense::http::MAX_MODEL_CHARS);
        let r = post(&app, path, &json!({"model": fine, "messages": thread})).await;
        assert_eq!(r.status, 200, "{path}: {}", r.text());
    }
    let r = post(
        &app,
        "/v1/compress",
        &json!({"messages": thread, "summarizer": {"model": long()}}),
    )
    .await;
    assert_clipped("summarizer.model", r.text().as_bytes());
}

/// A Responses thread over the message limit is named by its own field.
#[tokio::test]
async fn a_responses_thread_over_the_limit_is_named_input() {
    let app = app_with(condense::Config {
        limits: condense::config::LimitSettings {
            max_messages: 2,
            ..Default::default()
        },
        ..Default::default()
    });
    let item = json!({"role": "user", "content": "hi"});
    let r = post(&app, "/v1/tokens", &json!({"input": [item, item, item]})).await;
    let p = r.problem(413);
    let detail = p["detail"].as_str().unwrap();
    assert!(detail.starts_with("/input holds 3"), "{detail}");
}
