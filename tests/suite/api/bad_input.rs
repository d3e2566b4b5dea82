//! Bad input of every kind gets a 4xx problem naming the field, never a 500,
//! and the service keeps serving.

use axum::body::Body;
use axum::http::Request;
use serde_json::{Value, json};

use crate::support::common::{app, app_with, chat, get, post, post_raw, send};

fn call(id: &str) -> Value {
    json!({"id": id, "type": "function", "function": {"name": "read_file", "arguments": "{}"}})
}

#[tokio::test]
async fn malformed_json_is_400() {
    let app = app();
    for body in [
        "{",
        "{\"messages\": [}",
        "",
        "nul",
        "\u{feff}{}",
        "{\"a\":1}{}",
    ] {
        post_raw(&app, "/v1/tokens", "application/json", body.to_string())
            .await
            .problem(400);
    }
    // Invalid UTF-8.
    post_raw(
        &app,
        "/v1/tokens",
        "application/json",
        vec![b'{', b'"', 0xff, b'"', b'}'],
    )
    .await
    .problem(400);
    // Nesting past serde_json's recursion limit.
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    post_raw(&app, "/v1/verdict", "application/json", deep)
        .await
        .problem(400);
}

#[tokio::test]
async fn wrong_media_type_is_415() {
    let app = app();
    post_raw(&app, "/v1/tokens", "text/plain", "{}")
        .await
        .problem(415);
    post_raw(
        &app,
        "/v1/tokens",
        "application/x-www-form-urlencoded",
        "a=b",
    )
    .await
    .problem(415);
    let req = Request::post("/v1/tokens").body(Body::from("{}")).unwrap();
    send(&app, req).await.problem(415);
    // A JSON suffix type and parameters are fine.
    let ok = post_raw(
        &app,
        "/v1/tokens",
        "application/vnd.api+json; charset=utf-8",
        r#"{"text":"a"}"#,
    )
    .await;
    assert_eq!(ok.status, 200);
}

#[tokio::test]
async fn too_large_is_413_and_names_the_limit() {
    let app = app_with(condense::Config {
        limits: condense::config::LimitSettings {
            body_limit: 1024,
            ..Default::default()
        },
        ..Default::default()
    });
    let body = json!({"text": "x".repeat(4096)});
    let p = post(&app, "/v1/tokens", &body).await.problem(413);
    assert!(p["detail"].as_str().unwrap().contains("1024"));
    assert!(
        p["detail"]
            .as_str()
            .unwrap()
            .contains("CONDENSE_BODY_LIMIT"),
        "{p}"
    );
    assert_eq!(get(&app, "/healthz").await.status, 200);
}

#[tokio::test]
async fn number_and_shape_errors_are_in_plain_words() {
    let app = app();
    let raw = |body: &str| post_raw(&app, "/v1/verdict", "application/json", body.to_string());
    // A number past f64 is valid JSON: the 400 names its field.
    let p = raw(r#"{"messages": [], "config": {"chars_per_token": 1e400}}"#)
        .await
        .problem(400);
    let detail = p["detail"].as_str().unwrap();
    assert!(detail.contains("/config/chars_per_token"), "{p}");
    // Past u64: plain words, not serde's `expected u64`.
    let p = raw(
        r#"{"messages": [], "config": {"max_tokens_before_summary": 99999999999999999999999}}"#,
    )
    .await
    .problem(422);
    let detail = p["detail"].as_str().unwrap();
    assert!(
        detail.starts_with("/config/max_tokens_before_summary: ")
            && detail.contains("expected a whole number between 0 and 18446744073709551615"),
        "{p}"
    );
    // A body that is not an object: the detail is the sentence, no empty pointer.
    let p = raw("[]").await.problem(422);
    let detail = p["detail"].as_str().unwrap();
    assert!(detail.starts_with("the body must be a JSON object"), "{p}");
}

#[tokio::test]
async fn an_empty_thread_is_answered_with_a_warning_naming_it() {
    // Every provider refuses it; counting or judging it is still harmless
    // (the proxy forwards it unchanged), so a warning rather than a 422.
    let app = app();
    for route in ["/v1/tokens", "/v1/verdict", "/v1/compress"] {
        let out = post(&app, route, &json!({"messages": []})).await.json();
        let said = out["warnings"].to_string();
        assert!(said.contains("/messages is empty"), "{route}: {out}");
    }
    let out = post(&app, "/v1/tokens", &json!({"input": []})).await.json();
    assert!(
        out["warnings"].to_string().contains("/input is empty"),
        "{out}"
    );
    let out = post(&app, "/v1/tokens", &json!({"messages": chat(2)}))
        .await
        .json();
    assert!(!out["warnings"].to_string().contains("is empty"), "{out}");
}

#[tokio::test]
async fn too_many_parts_is_413_before_they_cost_memory() {
    // 7.8 MB of one-character text parts: within the byte limit, but
    // 250,000 JSON objects (about 1.2 KB of memory each once parsed).
    let app = app();
    let parts = vec![json!({"type": "text", "text": "a"}); 250_000];
    let body = json!({"messages": [{"role": "user", "content": parts}]});
    let r = post(&app, "/v1/tokens", &body).await;
    let p = r.problem(413);
    assert_eq!(p["type"], "urn:condense:problem:payload-too-large");
    assert!(
        p["detail"]
            .as_str()
            .unwrap()
            .contains("100000 JSON objects"),
        "{p}"
    );
    // The same text as 50,000 tiny messages is within the node limit: a
    // thread like any other where the message limit is lifted, and a 413
    // naming the limit under the default CONDENSE_MAX_MESSAGES.
    let messages: Vec<Value> = (0..50_000)
        .map(|i| json!({"role": if i % 2 == 0 { "user" } else { "assistant" }, "content": "a"}))
        .collect();
    let body = json!({"messages": messages});
    let p = post(&app, "/v1/tokens", &body).await.problem(413);
    assert!(
        p["detail"].as_str().unwrap().contains("limit is 10000"),
        "{p}"
    );
    let unlimited = crate::support::common::app_with(condense::Config {
        limits: condense::config::LimitSettings {
            max_messages: 0,
            ..Default::default()
        },
        ..Default::default()
    });
    let r = post(&unlimited, "/v1/tokens", &body).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["messages"].as_array().unwrap().len(), 50_000);
}

#[tokio::test]
async fn wrong_shapes_name_their_field() {
    let app = app();
    let cases = [
        (json!([1, 2]), "".to_string()),
        (json!({"messages": {"role": "user"}}), "/messages".into()),
        (json!({"messages": "hello"}), "/messages".into()),
        (
            json!({"messages": [{"role": "user", "content": 3}]}),
            "/messages/0/content".into(),
        ),
        (
            json!({"messages": [{"role": 1, "content": "x"}]}),
            "/messages/0/role".into(),
        ),
        (
            json!({"messages": [{"content": "x"}]}),
            "/messages/0/role".into(),
        ),
        (json!({"messages": ["just a string"]}), "/messages/0".into()),
        (
            json!({"messages": [{"role": "user", "content": "x", "name": 7}]}),
            "/messages/0/name".into(),
        ),
        (
            json!({"messages": [{"role": "user"}]}),
            "/messages/0/content".into(),
        ),
        (
            json!({"messages": [{"role": "user", "content": [{"type": "video", "url": "x"}]}]}),
            "/messages/0/content/0/type".into(),
        ),
        (
            json!({"messages": [{"role": "user", "content": [{"type": "text"}]}]}),
            "/messages/0/content/0/text".into(),
        ),
        (
            json!({"messages": [{"role": "assistant", "content": null, "tool_calls": [{"id": "a", "type": "function"}]}]}),
            "/messages/0/tool_calls/0/function".into(),
        ),
        (
            json!({"messages": [{"role": "assistant", "content": null, "tool_calls": {"id": "a"}}]}),
            "/messages/0/tool_calls".into(),
        ),
        (
            json!({"messages": [{"role": "user", "content": "x", "tool_calls": [call("a")]}]}),
            "/messages/0/tool_calls".into(),
        ),
        (
            json!({"messages": [{"role": "tool", "content": "x"}]}),
            "/messages/0/tool_call_id".into(),
        ),
        (
            json!({"messages": [{"role": "user", "content": "x", "metadata": {"iteration": -2}}]}),
            "/messages/0/metadata/iteration".into(),
        ),
        (
            json!({"messages": [], "format": "gemini"}),
            "/format".into(),
        ),
        (json!({"messages": [], "tools": {"a": 1}}), "/tools".into()),
        (json!({"messages": [], "model": 4}), "/model".into()),
        (
            json!({"messages": [], "temperature": 0.2}),
            "/temperature".into(),
        ),
        (
            json!({"messages": [], "format": "openai", "system": "s"}),
            "/system".into(),
        ),
    ];
    for (body, pointer) in cases {
        let r = post(&app, "/v1/tokens", &body).await;
        assert_eq!(r.pointers(), [pointer], "{body}");
    }
}

#[tokio::test]
async fn anthropic_shapes_name_their_field() {
    let app = app();
    let cases = [
        (json!({"system": 5, "messages": []}), "/system"),
        (
            json!({"system": [{"type": "image"}], "messages": []}),
            "/system/0/type",
        ),
        (
            // A mid-conversation system message is read, but holds text only.
            json!({"system": "s", "messages": [{"role": "user", "content": "hi"}, {"role": "system", "content": [{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AA=="}}]}]}),
            "/messages/1/content",
        ),
        (
            json!({"system": "s", "messages": [{"role": "tool", "content": "x"}]}),
            "/messages/0/role",
        ),
        (
            json!({"system": "s", "messages": [{"role": "user", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}]}]}),
            "/messages/0/content",
        ),
        (
            json!({"system": "s", "messages": [{"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": "x"}]}]}),
            "/messages/0/content/0/input",
        ),
        (
            json!({"system": "s", "messages": [{"role": "user", "content": [{"type": "image"}]}]}),
            "/messages/0/content/0/source",
        ),
        (
            json!({"system": "s", "messages": [{"role": "user", "content": [{"type": "hologram"}]}]}),
            "/messages/0/content/0/type",
        ),
    ];
    for (body, pointer) in cases {
        let r = post(&app, "/v1/tokens", &body).await;
        assert_eq!(r.pointers(), [pointer.to_string()], "{body}");
    }
}

#[tokio::test]
async fn tool_pairing_errors_point_at_the_id() {
    let app = app();
    // OpenAI: a result whose call is in no earlier assistant message.
    let r = post(
        &app,
        "/v1/tokens",
        &json!({"messages": [
            {"role": "user", "content": "go"},
            {"role": "tool", "tool_call_id": "ghost", "content": "x"}
        ]}),
    )
    .await;
    assert_eq!(r.pointers(), ["/messages/1/tool_call_id"]);

    // Anthropic: the same, in a tool_result block.
    let r = post(&app, "/v1/tokens", &json!({"system": "s", "messages": [
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "ghost", "content": "x"}]}
    ]}))
    .await;
    assert_eq!(r.pointers(), ["/messages/0/content/0/tool_use_id"]);

    // A duplicate call id.
    let r = post(
        &app,
        "/v1/verdict",
        &json!({"messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": null, "tool_calls": [call("a"), call("a")]},
        ]}),
    )
    .await;
    assert_eq!(r.pointers(), ["/messages/1/tool_calls/1/id"]);

    // A call whose result never came, followed by a user turn.
    let r = post(
        &app,
        "/v1/tokens",
        &json!({"messages": [
            {"role": "assistant", "content": null, "tool_calls": [call("a"), call("b")]},
            {"role": "tool", "tool_call_id": "a", "content": "x"},
            {"role": "user", "content": "well?"}
        ]}),
    )
    .await;
    assert_eq!(r.pointers(), ["/messages/0/tool_calls/1/id"]);

    // Anthropic: the result must be in the very next user message.
    let r = post(&app, "/v1/tokens", &json!({"system": "s", "messages": [
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}]},
        {"role": "user", "content": "wait"},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}]}
    ]}))
    .await;
    let pointers = r.pointers();
    assert!(
        pointers.contains(&"/messages/0/content/0/id".to_string()),
        "{pointers:?}"
    );
    assert!(
        pointers.contains(&"/messages/2/content/0/tool_use_id".to_string()),
        "{pointers:?}"
    );
}

#[tokio::test]
async fn a_pending_call_at_the_end_is_valid_in_both_formats() {
    let app = app();
    let r = post(
        &app,
        "/v1/tokens",
        &json!({"messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": null, "tool_calls": [call("a")]}
        ]}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let r = post(&app, "/v1/tokens", &json!({"messages": [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {"p": 1}}]}
    ]}))
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["format"], "anthropic");
}

#[tokio::test]
async fn several_problems_are_all_reported() {
    let app = app();
    let r = post(
        &app,
        "/v1/tokens",
        &json!({"messages": [
            {"role": "wizard", "content": "x"},
            {"role": "user", "content": 5},
            {"role": "user", "content": "fine"}
        ]}),
    )
    .await;
    assert_eq!(r.pointers(), ["/messages/0/role", "/messages/1/content"]);
}

#[tokio::test]
async fn unknown_routes_and_methods_are_problems() {
    let app = app();
    get(&app, "/v1/nothing").await.problem(404);
    let r = get(&app, "/v1/tokens").await;
    r.problem(405);
    let req = Request::delete("/healthz").body(Body::empty()).unwrap();
    send(&app, req).await.problem(405);
}

#[tokio::test]
async fn a_request_over_the_time_limit_is_503() {
    let app = app_with(condense::Config {
        limits: condense::config::LimitSettings {
            request_timeout: std::time::Duration::from_secs(0),
            ..Default::default()
        },
        ..Default::default()
    });
    let big = json!({"messages": [{"role": "user", "content": "word ".repeat(200_000)}]});
    post(&app, "/v1/tokens", &big).await.problem(503);
}

#[tokio::test]
async fn the_service_keeps_serving_after_bad_input() {
    let app = app();
    for body in ["{", "[]", "{\"messages\": 1}", "{\"text\": null}"] {
        let r = post_raw(&app, "/v1/verdict", "application/json", body.to_string()).await;
        assert!(r.status.is_client_error(), "{body}: {}", r.status);
    }
    let r = post(&app, "/v1/verdict", &json!({"messages": chat(3)})).await;
    assert_eq!(r.status, 200);
}

#[tokio::test]
async fn request_ids_are_honoured_or_made() {
    let app = app();
    let req = Request::get("/healthz")
        .header("x-request-id", "agent-42")
        .body(Body::empty())
        .unwrap();
    let r = send(&app, req).await;
    assert_eq!(r.headers["x-request-id"], "agent-42");
    let r = get(&app, "/readyz").await;
    assert_eq!(r.headers["x-request-id"].to_str().unwrap().len(), 36);
    assert_eq!(r.json()["status"], "ready");
    // Refusals carry one too: 404, 405, 422, 415.
    let refusals = [
        ("GET", "/nope", Some("application/json"), "{}"),
        ("DELETE", "/v1/tokens", None, ""),
        (
            "POST",
            "/v1/verdict",
            Some("application/json"),
            r#"{"bogus": 1}"#,
        ),
        ("POST", "/v1/verdict", None, "x"),
    ];
    for (method, path, content_type, body) in refusals {
        for id in [Some("agent-42"), None] {
            let mut req = Request::builder().method(method).uri(path);
            if let Some(ct) = content_type {
                req = req.header("content-type", ct);
            }
            if let Some(id) = id {
                req = req.header("x-request-id", id);
            }
            let r = send(&app, req.body(Body::from(body)).unwrap()).await;
            assert!(r.status.is_client_error(), "{method} {path}");
            let got = r.headers["x-request-id"].to_str().unwrap();
            assert!(
                id.map_or(got.len() == 36, |id| got == id),
                "{method} {path}: {got}"
            );
        }
    }
}

/// Whether `pointer` names a value of `body`, or a missing member of an
/// object in it (a required field that is absent).
fn points_into(body: &Value, pointer: &str) -> bool {
    pointer.is_empty()
        || body.pointer(pointer).is_some()
        || pointer
            .rsplit_once('/')
            .is_some_and(|(parent, _)| body.pointer(parent).is_some_and(Value::is_object))
}

/// Rejections no other test pins: each answers its status and problem type,
/// and a validation 422 points into the body, at the field named.
#[tokio::test]
async fn each_rejection_answers_its_problem_at_its_field() {
    let app = app();
    let user = json!({"role": "user", "content": "hi"});
    let three = json!([user, {"role": "assistant", "content": "a"}, user]);
    let use_t = json!({"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}]});
    let result = |extra: Value| json!({"messages": [use_t, {"role": "user", "content": [merged(json!({"type": "tool_result", "tool_use_id": "t"}), extra)]}]});
    let assistant =
        |extra: Value| json!({"messages": [merged(json!({"role": "assistant"}), extra)]});
    let (t, v, c, json) = (
        "/v1/tokens",
        "/v1/verdict",
        "/v1/compress",
        "application/json",
    );
    #[rustfmt::skip]
    let cases = [
        ("text/json", t, "text/json", json!({"text": "a"}), 415, "unsupported-media-type", ""),
        ("unknown count source", v, json, json!({"messages": [user], "count": "exact"}), 422, "validation", "/count"),
        ("unknown verdict field", v, json, json!({"messages": [user], "methd": "chars"}), 422, "validation", "/methd"),
        ("unknown compress field", c, json, json!({"messages": [user], "strategy": "heuristic"}), 422, "validation", "/strategy"),
        ("bpe with chars_per_token", t, json, json!({"text": "a", "method": "bpe", "chars_per_token": 4}), 422, "validation", "/chars_per_token"),
        ("verdict bpe with chars_per_token", v, json, json!({"messages": [user], "method": "bpe", "chars_per_token": 4}), 422, "validation", "/chars_per_token"),
        ("compress chars_per_token too small", c, json, json!({"messages": [user], "chars_per_token": 0.1}), 422, "validation", "/chars_per_token"),
        ("a rule shorter than its marker", c, json, json!({"messages": [user], "config": {"max_tool_result_chars": 10}}), 422, "validation", "/config/max_tool_result_chars"),
        ("text a number", t, json, json!({"text": 5}), 422, "validation", "/text"),
        ("unknown method", t, json, json!({"text": "a", "method": "words"}), 422, "validation", "/method"),
        ("text with tools", t, json, json!({"text": "a", "tools": []}), 422, "validation", "/text"),
        ("text with format", t, json, json!({"text": "a", "format": "openai"}), 422, "validation", "/text"),
        ("user with null content", t, json, json!({"messages": [{"role": "user", "content": null}]}), 422, "validation", "/messages/0/content"),
        ("image_url without url", t, json, json!({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]}), 422, "validation", "/messages/0/content/0/image_url/url"),
        ("tool call of unknown type", t, json, assistant(json!({"tool_calls": [{"id": "c1", "type": "web", "function": {"name": "f", "arguments": "{}"}}]})), 422, "validation", "/messages/0/tool_calls/0/type"),
        ("function_call without arguments", t, json, assistant(json!({"function_call": {"name": "f"}})), 422, "validation", "/messages/0/function_call/arguments"),
        ("iteration a string", t, json, json!({"messages": [{"role": "user", "content": "hi", "metadata": {"iteration": "1"}}]}), 422, "validation", "/messages/0/metadata/iteration"),
        ("anthropic without content", t, json, json!({"format": "anthropic", "messages": [{"role": "assistant"}]}), 422, "validation", "/messages/0/content"),
        ("tool_result from the assistant", t, json, assistant(json!({"content": [{"type": "tool_result", "tool_use_id": "t"}]})), 422, "validation", "/messages/0/content"),
        ("tool_use without input", t, json, assistant(json!({"content": [{"type": "tool_use", "id": "t", "name": "f"}]})), 422, "validation", "/messages/0/content/0/input"),
        ("tool_use inside a tool_result", t, json, result(json!({"content": [use_t["content"][0]]})), 422, "validation", "/messages/1/content/0/content/0/type"),
        ("is_error not a boolean", t, json, result(json!({"is_error": "yes"})), 422, "validation", "/messages/1/content/0/is_error"),
        ("verdict without messages", v, json, json!({}), 422, "validation", "/messages"),
        ("verdict with null messages", v, json, json!({"messages": null}), 422, "validation", "/messages"),
        ("compress without messages", c, json, json!({"force": true}), 422, "validation", "/messages"),
        ("config below its bound", v, json, json!({"messages": [user], "config": {"max_summary_tokens": 1}}), 422, "validation", "/config/max_summary_tokens"),
        ("config above its bound", v, json, json!({"messages": [user], "config": {"min_recent_messages": 10001}}), 422, "validation", "/config/min_recent_messages"),
        ("config integer written 5.0", v, json, json!({"messages": [user], "config": {"max_messages_before_summary": 5.0}}), 422, "validation", "/config/max_messages_before_summary"),
        ("unknown on_upstream_error", c, json, json!({"messages": [user], "config": {"on_upstream_error": "retry"}}), 422, "validation", "/config/on_upstream_error"),
        ("summary without last_message_idx", v, json, json!({"messages": [user], "summary": {"content": "x"}}), 422, "validation", "/summary/last_message_idx"),
        ("force null", c, json, json!({"messages": [user], "force": null}), 422, "validation", "/force"),
        ("strategy null", c, json, json!({"messages": [user], "summarizer": {"strategy": null}}), 422, "validation", "/summarizer/strategy"),
        ("instructions too long", c, json, json!({"messages": [user], "summarizer": {"instructions": "é".repeat(4001)}}), 422, "validation", "/summarizer/instructions"),
        ("hybrid without an upstream", c, json, json!({"messages": three, "force": true, "config": {"min_recent_messages": 1}, "summarizer": {"strategy": "hybrid"}}), 422, "strategy-unavailable", ""),
    ];
    for (name, path, content_type, body, status, slug, field) in cases {
        let p = post_raw(&app, path, content_type, body.to_string())
            .await
            .problem(status);
        assert_eq!(p["type"], format!("urn:condense:problem:{slug}"), "{name}");
        let errors = p["errors"].as_array();
        assert_eq!(errors.is_some(), slug == "validation", "{name}: {p}");
        let pointers: Vec<&str> = errors
            .into_iter()
            .flatten()
            .map(|e| e["pointer"].as_str().expect("a string pointer"))
            .collect();
        for pointer in &pointers {
            assert!(
                points_into(&body, pointer),
                "{name}: `{pointer}` is not in the body"
            );
        }
        assert!(
            field.is_empty() || pointers.contains(&field),
            "{name}: {field} is not named: {p}"
        );
    }
}

/// Null is absent for every optional field (but `force`, above).
#[tokio::test]
async fn null_optional_fields_are_absent_ones() {
    let app = app();
    let hi = json!([{"role": "user", "content": "hi"}]);
    let thread = json!({"messages": hi, "system": null, "tools": null, "format": null, "model": null,
                        "encoding": null, "profile": null, "config": null, "summary": null});
    #[rustfmt::skip]
    let cases = [
        ("/v1/tokens", json!({"text": "", "model": null, "encoding": null, "method": null, "chars_per_token": null,
                              "messages": null, "system": null, "tools": null, "format": null})),
        ("/v1/tokens", json!({"messages": [], "text": null})),
        ("/v1/tokens", json!({"input": "hi", "instructions": null, "format": "responses"})),
        ("/v1/verdict", thread.clone()),
        ("/v1/compress", merged(thread, json!({"summarizer": null, "force": false, "group_by": null, "keep_recent_iterations": null}))),
    ];
    for (path, body) in cases {
        let r = post(&app, path, &body).await;
        assert_eq!(r.status, 200, "{path} {body}: {}", r.text());
    }
}

/// `base` with the members of `extra` set.
fn merged(mut base: Value, extra: Value) -> Value {
    for (k, v) in extra.as_object().expect("an object") {
        base[k] = v.clone();
    }
    base
}
