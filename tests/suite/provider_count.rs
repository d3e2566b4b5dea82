//! Provider-exact counts (`count: "provider"`): the real counting endpoints
//! of the local llama-server (Anthropic `POST /v1/messages/count_tokens`,
//! OpenAI `POST /v1/responses/input_tokens`) behind a relay that counts the
//! requests, so a remembered count is seen to make none; and the faults a
//! real server will not produce on demand (429, 500, garbage, a hang, a
//! redirect, an error that echoes the key) from the stub, each answered
//! with the local estimate and a warning.
use crate::support::recorder::Recorder;
use crate::support::{common, live, prometheus, stub};

use serde_json::{Value, json};

use common::{Reply, app_with, get, post, thread};
use condense::Config;
use stub::Fault;

const KEY: &str = "sk-count-SECRET-7311";

/// The body of the one request the relay has forwarded, which went to `path`.
fn only(relay: &Recorder, path: &str) -> Value {
    let calls = relay.exchanges();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].path(), path);
    calls[0].json()
}

/// condense with both provider routes pointing at `base` (the Anthropic
/// base is the origin, the OpenAI base `…/v1`).
fn app_for(base: &str) -> axum::Router {
    app_with(Config {
        count: condense::config::CountSettings {
            anthropic_url: Some(base.to_string()),
            openai_url: Some(format!("{base}/v1")),
            api_key: KEY.parse().unwrap(),
            timeout: std::time::Duration::from_secs(1),
        },
        ..Config::default()
    })
}

/// A fixture's first `n` messages, as a `/v1/tokens` body counted by the provider.
fn first(name: &str, n: usize) -> Value {
    let mut body = thread(name);
    let messages: Vec<Value> = body["messages"].as_array().unwrap()[..n].to_vec();
    body["messages"] = Value::Array(messages);
    body["count"] = json!("provider");
    body
}

/// The same request counted locally.
async fn local_total(app: &axum::Router, body: &Value) -> u64 {
    let mut local = body.clone();
    local.as_object_mut().unwrap().remove("count");
    let r = post(app, "/v1/tokens", &local).await;
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()["total_tokens"].as_u64().unwrap()
}

/// `input_tokens` the llama-server answers for `body` at `path`, asked directly.
async fn direct(llm: &str, path: &str, body: &Value) -> u64 {
    let answer: Value = reqwest::Client::new()
        .post(format!("{}{path}", live::origin(llm)))
        .json(body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    answer["input_tokens"]
        .as_u64()
        .unwrap_or_else(|| panic!("{path} answered {answer}"))
}

fn assert_provider(r: &Reply) -> Value {
    assert_eq!(r.status, 200, "{}", r.text());
    let body = r.json();
    assert_eq!(body["source"], "provider", "{body}");
    assert_eq!(body["exact"], true);
    assert!(body["local_total_tokens"].as_u64().is_some(), "{body}");
    assert!(!r.text().contains(KEY));
    body
}

#[tokio::test]
async fn anthropic_threads_are_counted_by_count_tokens_once() {
    let Some(llm) = live::llm("anthropic_threads_are_counted_by_count_tokens_once") else {
        return;
    };
    let relay = Recorder::start(&live::origin(&llm)).await;
    let app = app_for(&relay.url);
    // llama-server's template takes a thread that ends on a user turn.
    let body = first("small-00.anthropic", 12);

    let r = post(&app, "/v1/tokens", &body).await;
    let answer = assert_provider(&r);
    let sent = only(&relay, "/v1/messages/count_tokens");
    // What was sent is the caller's thread as it came...
    let fixture = thread("small-00.anthropic");
    let expected = json!({
        "model": fixture["model"],
        "system": fixture["system"],
        "messages": body["messages"],
        "tools": fixture["tools"],
    });
    assert_eq!(sent, expected);
    // ...and the total is what the endpoint says of it.
    let want = direct(&llm, "/v1/messages/count_tokens", &expected).await;
    assert_eq!(answer["total_tokens"], want);
    assert_eq!(
        answer["local_total_tokens"],
        local_total(&app, &body).await,
        "local_total_tokens is the local count"
    );
    // Per-message counts stay the local ones.
    let per: u64 = answer["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["tokens"].as_u64().unwrap())
        .sum();
    assert!(per > 0);

    // Asked again: remembered, no request.
    let again = assert_provider(&post(&app, "/v1/tokens", &body).await);
    assert_eq!(again["total_tokens"], want);
    assert_eq!(relay.count(), 1, "a remembered count asks nothing");
    let requests = "condense_upstream_requests_total";
    let kind = [("kind", "count_anthropic")];
    assert_eq!(count_metrics(&app, requests, &kind).await, 1.0);

    // A grown thread is another question.
    let grown = first("small-00.anthropic", 14);
    let bigger = assert_provider(&post(&app, "/v1/tokens", &grown).await);
    // Asked again (more than once only when a loaded machine made the
    // upstream client retry).
    assert!(relay.count() >= 2, "a grown thread asks again");
    assert!(bigger["total_tokens"].as_u64().unwrap() > want);
}

#[tokio::test]
async fn openai_threads_are_counted_by_responses_input_tokens() {
    let Some(llm) = live::llm("openai_threads_are_counted_by_responses_input_tokens") else {
        return;
    };
    let relay = Recorder::start(&live::origin(&llm)).await;
    let app = app_for(&relay.url);
    let fixture = thread("small-00.openai");
    // Up to a user turn (messages[22]), as llama-server's template wants.
    let body = first("small-00.openai", 23);

    let answer = assert_provider(&post(&app, "/v1/tokens", &body).await);
    let sent = only(&relay, "/v1/responses/input_tokens");
    // The chat thread went as Responses items: one function call per tool
    // call, one output per tool message, the tools as function tools.
    let messages = body["messages"].as_array().unwrap();
    let calls: usize = messages
        .iter()
        .filter_map(|m| m["tool_calls"].as_array())
        .map(Vec::len)
        .sum();
    let results = messages.iter().filter(|m| m["role"] == "tool").count();
    let items = sent["input"].as_array().unwrap();
    let of_type = |t: &str| items.iter().filter(|i| i["type"] == t).count();
    assert!(calls > 0 && results > 0);
    assert_eq!(of_type("function_call"), calls);
    assert_eq!(of_type("function_call_output"), results);
    assert_eq!(sent["model"], fixture["model"]);
    assert_eq!(
        sent["tools"].as_array().unwrap().len(),
        fixture["tools"].as_array().unwrap().len()
    );
    assert!(sent["tools"][0]["name"].is_string() && sent["tools"][0]["function"].is_null());
    let want = direct(&llm, "/v1/responses/input_tokens", &sent).await;
    assert_eq!(answer["total_tokens"], want);

    let again = assert_provider(&post(&app, "/v1/tokens", &body).await);
    assert_eq!(again["total_tokens"], want);
    assert_eq!(relay.count(), 1, "a remembered count asks nothing");

    let grown = first("small-00.openai", 24);
    let bigger = assert_provider(&post(&app, "/v1/tokens", &grown).await);
    // Asked again (more than once only when a loaded machine made the
    // upstream client retry).
    assert!(relay.count() >= 2, "a grown thread asks again");
    assert!(bigger["total_tokens"].as_u64().unwrap() > want);
}

/// A Responses thread goes as it came: its items and `instructions`,
/// byte for byte, to `responses/input_tokens`.
#[tokio::test]
async fn responses_threads_are_counted_as_they_came() {
    let Some(llm) = live::llm("responses_threads_are_counted_as_they_came") else {
        return;
    };
    let relay = Recorder::start(&live::origin(&llm)).await;
    let app = app_for(&relay.url);
    let body = json!({
        "count": "provider",
        "model": "gpt-4o",
        "instructions": "You are a careful coding agent.",
        "input": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Read src/lib.rs."}]},
            {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Read it first."}],
             "content": [{"type": "reasoning_text", "text": "The file is short."}], "encrypted_content": "gAAAAB"},
            {"type": "function_call", "call_id": "c1", "name": "read_file", "arguments": "{\"path\":\"src/lib.rs\"}"},
            {"type": "function_call_output", "call_id": "c1", "output": "pub fn add(a: i32, b: i32) -> i32 { a + b }"},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "It adds."}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Thanks."}]}
        ],
        "tools": [{"type": "function", "name": "read_file", "parameters": {"type": "object"}}]
    });
    let answer = assert_provider(&post(&app, "/v1/tokens", &body).await);
    assert_eq!(answer["format"], "responses");
    let sent = only(&relay, "/v1/responses/input_tokens");
    for key in ["model", "instructions", "input", "tools"] {
        assert_eq!(sent[key], body[key], "{key} went as it came");
    }
    let want = direct(&llm, "/v1/responses/input_tokens", &sent).await;
    assert_eq!(answer["total_tokens"], want);
    let again = assert_provider(&post(&app, "/v1/tokens", &body).await);
    assert_eq!(again["total_tokens"], want);
    assert_eq!(relay.count(), 1, "a remembered count asks nothing");
}

#[tokio::test]
async fn the_verdict_decides_on_the_provider_total() {
    let Some(llm) = live::llm("the_verdict_decides_on_the_provider_total") else {
        return;
    };
    let relay = Recorder::start(&live::origin(&llm)).await;
    let app = app_for(&relay.url);
    let mut body = first("small-00.anthropic", 12);
    body.as_object_mut().unwrap().remove("count");
    let provider = direct(
        &llm,
        "/v1/messages/count_tokens",
        &json!({"model": body["model"], "system": body["system"],
                "messages": body["messages"], "tools": body["tools"]}),
    )
    .await;

    // Asked for by the request's profile override...
    let mut by_profile = body.clone();
    // ...with a token threshold just above the provider's total (every due
    // summary written, paying or not: the count is tested here).
    by_profile["config"] = json!({"count": "provider", "max_tokens_before_summary": provider + 1,
        "min_recent_messages": 0, "max_payback_turns": 1_000_000});
    let v = assert_provider(&post(&app, "/v1/verdict", &by_profile).await);
    assert_eq!(v["total_tokens"], provider);
    assert_eq!(v["should_summarize"], false, "{v}");
    by_profile["config"]["max_tokens_before_summary"] = json!(provider);
    let v = assert_provider(&post(&app, "/v1/verdict", &by_profile).await);
    assert_eq!(v["trigger"], "tokens", "{v}");
    assert_eq!(relay.count(), 1, "the same thread is asked once");

    // The request's own `count` wins over the profile's.
    by_profile["count"] = json!("local");
    let local = post(&app, "/v1/verdict", &by_profile).await;
    assert_eq!(local.json()["source"], "local");
    assert!(local.json().get("local_total_tokens").is_none());
    assert_ne!(local.json()["total_tokens"], provider);

    // With a `summary` object, what would be sent leaves its messages out:
    // the provider counted the whole thread, the difference is local.
    let mut summarized = body.clone();
    summarized["count"] = json!("provider");
    summarized["summary"] =
        json!({"last_message_idx": 5, "content": "Read the files; the test fails in connect.rs."});
    let v = post(&app, "/v1/verdict", &summarized).await;
    assert_eq!(v.status, 200, "{}", v.text());
    let v = v.json();
    assert_eq!(v["source"], "provider", "{v}");
    assert_eq!(v["exact"], false, "a part of it is estimated: {v}");
    assert!(
        v["warnings"].to_string().contains("`summary` object"),
        "{v}"
    );
    let local_verdict = v["local_total_tokens"].as_u64().unwrap();
    let local_thread = local_total(&app, &body).await;
    assert!(local_verdict < local_thread);
    assert_eq!(
        v["total_tokens"].as_u64().unwrap(),
        provider + local_verdict - local_thread
    );
    assert_eq!(relay.count(), 1, "the same thread, still remembered");
}

// ---------------------------------------------------------------- faults

/// A small Anthropic thread counted by the provider.
fn small() -> Value {
    first("small-00.anthropic", 3)
}

/// condense in front of a stub that answers `fault` at the Anthropic
/// counting endpoint.
async fn faulty(fault: Fault) -> (axum::Router, stub::Stub) {
    let stub = stub::start_on(fault, true, "/v1/messages/count_tokens").await;
    let app = app_with(Config {
        count: condense::config::CountSettings {
            anthropic_url: Some(stub.url.clone()),
            api_key: KEY.parse().unwrap(),
            timeout: std::time::Duration::from_secs(1),
            ..Default::default()
        },
        ..Config::default()
    });
    (app, stub)
}

/// The answer is the local estimate, with a warning holding `what`.
async fn falls_back(app: &axum::Router, body: &Value, what: &str) -> Value {
    let r = post(app, "/v1/tokens", body).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let answer = r.json();
    assert_eq!(answer["source"], "local", "{answer}");
    assert!(answer.get("local_total_tokens").is_none());
    assert_eq!(answer["total_tokens"], local_total(app, body).await);
    let warnings = answer["warnings"].to_string();
    assert!(
        warnings.contains(what) && warnings.contains("local estimate"),
        "{warnings}"
    );
    assert!(!r.text().contains(KEY), "the key leaked: {}", r.text());
    answer
}

#[tokio::test]
async fn failed_counts_answer_the_local_estimate_with_a_warning() {
    for (fault, what) in [
        (Fault::RateLimitedOnce, "HTTP 429"),
        (Fault::ServerError, "HTTP 500"),
        (Fault::Garbage, "an unreadable answer"),
        // 200, but no `input_tokens` in it.
        (Fault::Ok, "an unreadable answer"),
        (Fault::Hang, "timed out"),
        (Fault::EchoKey, "HTTP 401"),
    ] {
        let (app, stub) = faulty(fault).await;
        let answer = falls_back(&app, &small(), what).await;
        assert!(
            !answer.to_string().contains("exploded") && !answer.to_string().contains("credentials"),
            "{fault:?}: the provider's body leaked: {answer}"
        );
        assert_eq!(stub.calls(), 1, "{fault:?}");
        // The key went to the provider, as Anthropic wants it.
        let headers = stub.headers.lock().unwrap();
        assert_eq!(headers[0]["x-api-key"], KEY);
        assert_eq!(headers[0]["anthropic-version"], "2023-06-01");
    }
}

/// The upstream metrics of the counting calls.
async fn count_metrics(app: &axum::Router, name: &str, labels: &[(&str, &str)]) -> f64 {
    let r = get(app, "/metrics").await;
    prometheus::parse(&r.text()).value(name, labels)
}

#[tokio::test]
async fn a_failed_count_is_not_remembered() {
    let (app, stub) = faulty(Fault::ServerError).await;
    falls_back(&app, &small(), "HTTP 500").await;
    falls_back(&app, &small(), "HTTP 500").await;
    assert_eq!(stub.calls(), 2, "a failure is asked again");
    let kind = ("kind", "count_anthropic");
    let errors = "condense_upstream_errors_total";
    assert_eq!(
        count_metrics(&app, errors, &[kind, ("error", "status_5xx")]).await,
        2.0
    );
    let requests = "condense_upstream_requests_total";
    assert_eq!(count_metrics(&app, requests, &[kind]).await, 2.0);
}

#[tokio::test]
async fn redirects_are_not_followed() {
    let target = stub::start_on(Fault::Ok, true, "/v1/messages/count_tokens").await;
    let redirect = stub::start_redirect(&target.url).await;
    let app = app_with(Config {
        count: condense::config::CountSettings {
            anthropic_url: Some(redirect.url.clone()),
            api_key: KEY.parse().unwrap(),
            ..Default::default()
        },
        ..Config::default()
    });
    falls_back(&app, &small(), "HTTP 307").await;
    assert_eq!(redirect.calls(), 1);
    assert_eq!(target.calls(), 0, "the key must not follow a redirect");
}

#[tokio::test]
async fn a_route_without_a_url_names_the_setting() {
    let app = app_with(Config::default());
    falls_back(&app, &small(), "CONDENSE_COUNT_ANTHROPIC_URL is not set").await;
    let mut chat = thread("small-00.openai");
    chat["count"] = json!("provider");
    falls_back(&app, &chat, "CONDENSE_COUNT_OPENAI_URL is not set").await;
}

#[tokio::test]
async fn a_thread_without_a_responses_form_is_not_sent() {
    let stub = stub::start_on(Fault::Ok, false, "/responses/input_tokens").await;
    let app = app_with(Config {
        proxy: condense::config::ProxySettings {
            openai_url: Some(stub.url.clone()),
            ..Default::default()
        },
        ..Config::default()
    });
    let body = json!({"count": "provider", "messages": [
        {"role": "user", "content": [{"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}}]}
    ]});
    falls_back(&app, &body, "`input_audio` part").await;
    assert_eq!(stub.calls(), 0);
}

#[tokio::test]
async fn a_text_is_not_counted_by_the_provider() {
    let app = app_with(Config::default());
    let r = post(
        &app,
        "/v1/tokens",
        &json!({"text": "hello", "count": "provider"}),
    )
    .await;
    assert_eq!(r.status, 422, "{}", r.text());
    assert!(r.text().contains("/count"), "{}", r.text());
    let r = post(
        &app,
        "/v1/tokens",
        &json!({"text": "hello", "count": "nope"}),
    )
    .await;
    assert_eq!(r.status, 422, "{}", r.text());
}
