//! The per-conversation ledger (issue 34): a session proxied through
//! condense to a scripted provider, whose ledger (`GET
//! /v1/conversations/{id}`) must equal, turn by turn, what the provider
//! billed, with what condense counted and the turn as it would have been
//! billed without condense. In SQLite and in PostgreSQL (run
//! `scripts/with-postgres.sh cargo test --test suite proxy_ledger::`).
use crate::support::common::{Reply, anthropic_proxy, get, send};
use crate::support::{live, server};

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::{Request, header};
use axum::response::IntoResponse;
use axum::routing::post;
use condense::cache::{Cache, CacheOptions};
use serde_json::{Value, json};

/// What the scripted provider billed, turn by turn, in the ledger's shape.
type Bills = Arc<Mutex<Vec<Value>>>;

/// An Anthropic provider that bills each request by simple cache rules: a
/// prompt of a token per 4 bytes, the previous prompt read from the cache,
/// 3 tokens after the last breakpoint, the rest written for 5 minutes. A
/// streamed request gets its bill in `message_start` and `message_delta`.
pub(crate) async fn provider() -> (String, Bills) {
    let bills: Bills = Arc::default();
    let last = Arc::new(Mutex::new(None::<u64>));
    let seen = bills.clone();
    let app = Router::new().route(
        "/v1/messages",
        post(move |body: Bytes| {
            let (bills, last) = (seen.clone(), last.clone());
            async move {
                let request: Value = serde_json::from_slice(&body).unwrap();
                let prompt = body.len() as u64 / 4;
                let read = last
                    .lock()
                    .unwrap()
                    .replace(prompt)
                    .unwrap_or(0)
                    .min(prompt);
                let turn = bills.lock().unwrap().len() as u64;
                let (input, write, output) = (3, (prompt - read).saturating_sub(3), 7 + turn);
                bills.lock().unwrap().push(json!({
                    "input": input, "cache_read": read, "cache_write_5m": write,
                    "cache_write_1h": 0, "output": output, "reasoning": 0,
                }));
                let usage = json!({"input_tokens": input, "cache_read_input_tokens": read,
                                   "cache_creation_input_tokens": write, "output_tokens": output});
                let message = json!({"id": format!("msg_{turn}"), "type": "message",
                    "role": "assistant", "model": "claude-scripted",
                    "content": [{"type": "text", "text": "Done."}],
                    "stop_reason": "end_turn", "usage": usage});
                if request["stream"] != true {
                    return axum::Json(message).into_response();
                }
                let mut start = message.clone();
                start["content"] = json!([]);
                start["usage"]["output_tokens"] = json!(1);
                let stream = format!(
                    "event: message_start\ndata: {}\n\n\
                     event: message_delta\ndata: {}\n\n\
                     event: message_stop\ndata: {{\"type\":\"message_stop\"}}\n\n",
                    json!({"type": "message_start", "message": start}),
                    json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                           "usage": {"output_tokens": output}}),
                );
                ([(header::CONTENT_TYPE, "text/event-stream")], stream).into_response()
            }
        }),
    );
    (server::serve_router(app).await, bills)
}

/// A condense whose default profile writes every due summary, paying or
/// not (`max_payback_turns`): the ledger is what is tested here, so the
/// sessions must compress; the payback rule has its own tests.
async fn condense(provider: &str, cache_url: &str) -> Router {
    let profile = "[profiles.default]\nmax_payback_turns = 1000000\n";
    anthropic_proxy(provider, cache_url, profile).await
}

pub(crate) async fn turn(app: &Router, body: &Value) -> Reply {
    let req = Request::post("/v1/messages")
        .header(header::CONTENT_TYPE, "application/json")
        .header("anthropic-version", "2023-06-01")
        .body(Body::from(body.to_string()))
        .unwrap();
    let reply = send(app, req).await;
    assert_eq!(
        reply.status,
        200,
        "{}",
        String::from_utf8_lossy(&reply.bytes)
    );
    reply
}

fn header_n(reply: &Reply, name: &str) -> Value {
    reply.headers.get(name).map_or(Value::Null, |v| {
        json!(v.to_str().unwrap().parse::<u64>().unwrap())
    })
}

/// The ledger once it holds `turns` turns: each is written just after its
/// answer ends, in a task of its own (waited for up to 30 s: a loaded
/// machine is slow, never wrong).
pub(crate) async fn ledger(app: &Router, id: &str, turns: usize) -> Value {
    for _ in 0..1500 {
        let reply = get(app, &format!("/v1/conversations/{id}")).await;
        if reply.status == 200 && reply.json()["turns"].as_array().unwrap().len() == turns {
            return reply.json();
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the ledger of {id} never reached {turns} turns");
}

/// A session of `bodies`, one turn each; checks its ledger against the
/// provider's bills and condense's headers, and returns it.
async fn session(cache_url: &str, bodies: &[Value]) -> Value {
    let (url, bills) = provider().await;
    let app = condense(&url, cache_url).await;
    let (mut id, mut counted) = (None, Vec::new());
    for (i, body) in bodies.iter().enumerate() {
        let reply = turn(&app, body).await;
        let named = reply.headers["x-condense-conversation"]
            .to_str()
            .unwrap()
            .to_string();
        assert_eq!(id.get_or_insert(named.clone()), &named, "one conversation");
        counted.push((
            header_n(&reply, "x-condense-tokens-before"),
            header_n(&reply, "x-condense-tokens-after"),
        ));
        ledger(&app, &named, i + 1).await;
    }
    let id = id.unwrap();
    let ledger = ledger(&app, &id, bodies.len()).await;
    let bills = bills.lock().unwrap().clone();
    assert_eq!(ledger["conversation"], id.as_str());
    for (i, t) in ledger["turns"].as_array().unwrap().iter().enumerate() {
        assert_eq!(t["billed"], bills[i], "turn {i}: the provider's bill");
        assert_eq!(t["route"], "/v1/messages");
        assert_eq!(t["provider"], "anthropic");
        assert_eq!(t["model"], "claude-scripted");
        assert_eq!(t["dropped_items"], 0);
        assert_eq!(
            (t["sent_tokens"].clone(), t["forwarded_tokens"].clone()),
            counted[i]
        );
        assert_eq!(t["without_condense"]["output"], bills[i]["output"]);
    }
    let total = |kind: &str| -> u64 { bills.iter().map(|b| b[kind].as_u64().unwrap()).sum() };
    for kind in ["input", "cache_read", "cache_write_5m", "output"] {
        assert_eq!(ledger["totals"]["billed"][kind], total(kind), "{kind}");
    }
    assert_eq!(ledger["totals"]["turns"], bodies.len());
    ledger
}

pub(crate) fn user(text: &str) -> Value {
    json!({"role": "user", "content": [{"type": "text", "text": text,
                                         "cache_control": {"type": "ephemeral"}}]})
}

/// A short conversation condense never compresses, its second turn streamed.
fn short() -> Vec<Value> {
    let one = vec![user("What does the build script do?")];
    let mut two = one.clone();
    two.push(json!({"role": "assistant", "content": "It compiles the assets."}));
    two.push(user("And where does it put them?"));
    let body = |messages: Vec<Value>, stream: bool| {
        json!({"model": "claude-sonnet-4-5", "max_tokens": 64, "stream": stream,
               "system": "You are terse.", "messages": messages})
    };
    vec![body(one, false), body(two, true)]
}

/// The docs' Claude Code turn (compressed at once), and the turn after it.
fn long() -> Vec<Value> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/examples/claude-code-turn.json"
    );
    let first: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut second = first.clone();
    let messages = second["messages"].as_array_mut().unwrap();
    messages.push(json!({"role": "assistant", "content": "The tests pass now."}));
    messages.push(user("Commit it."));
    second["stream"] = json!(true);
    vec![first, second]
}

/// Never compressed: each turn's counterfactual is what was billed.
async fn unchanged_turns_cost_what_they_cost(cache_url: &str) {
    let ledger = session(cache_url, &short()).await;
    for t in ledger["turns"].as_array().unwrap() {
        assert_eq!(t["sent_tokens"], t["forwarded_tokens"]);
        assert_eq!(t["without_condense"], t["billed"]);
        assert_eq!(t["summary_call_tokens"], Value::Null);
    }
    let d = &ledger["totals"]["difference"];
    for kind in [
        "input",
        "cache_read",
        "cache_write_5m",
        "cache_write_1h",
        "output",
        "input_total",
    ] {
        assert_eq!(d[kind], 0, "{kind}");
    }
}

/// Compressed: the client's own thread, scaled to the provider's tokens,
/// cached as the client's would have been, costs more than was billed.
async fn compressed_turns_are_set_against_the_clients_thread(cache_url: &str) {
    let ledger = session(cache_url, &long()).await;
    let turns = ledger["turns"].as_array().unwrap();
    let n = |v: &Value| v.as_u64().unwrap();
    let input_total = |b: &Value| {
        ["input", "cache_read", "cache_write_5m", "cache_write_1h"]
            .iter()
            .map(|k| n(&b[*k]))
            .sum::<u64>()
    };
    for (i, t) in turns.iter().enumerate() {
        let (sent, fwd) = (n(&t["sent_tokens"]), n(&t["forwarded_tokens"]));
        assert!(fwd < sent, "turn {i} was compressed: {t}");
        assert!(
            t["summary_call_tokens"].is_u64(),
            "turn {i}: a summary is in play"
        );
        let scaled = (input_total(&t["billed"]) as f64 * sent as f64 / fwd as f64).round();
        assert_eq!(
            input_total(&t["without_condense"]),
            scaled as u64,
            "turn {i}"
        );
        // The same tail after the breakpoint, as billed.
        assert_eq!(t["without_condense"]["input"], t["billed"]["input"]);
    }
    // The first turn had nothing cached; the second reads the first's thread.
    assert_eq!(turns[0]["without_condense"]["cache_read"], 0);
    assert_eq!(
        n(&turns[1]["without_condense"]["cache_read"]),
        input_total(&turns[0]["without_condense"])
    );
    let d = &ledger["totals"]["difference"];
    assert!(d["input_total"].as_i64().unwrap() < 0, "{d}");
    assert_eq!(d["output"], 0);
}

pub(crate) fn sqlite_url(dir: &tempfile::TempDir) -> String {
    format!("sqlite://{}", dir.path().join("cache.db").display())
}

#[tokio::test]
async fn sqlite_an_unchanged_session_costs_what_it_was_billed() {
    let dir = tempfile::tempdir().unwrap();
    unchanged_turns_cost_what_they_cost(&sqlite_url(&dir)).await;
}

#[tokio::test]
async fn sqlite_a_compressed_session_is_set_against_the_clients_thread() {
    let dir = tempfile::tempdir().unwrap();
    compressed_turns_are_set_against_the_clients_thread(&sqlite_url(&dir)).await;
}

#[tokio::test]
async fn postgres_an_unchanged_session_costs_what_it_was_billed() {
    let Some(db) = live::new_database("proxy_ledger::postgres_unchanged").await else {
        return;
    };
    unchanged_turns_cost_what_they_cost(&db.url()).await;
}

#[tokio::test]
async fn postgres_a_compressed_session_is_set_against_the_clients_thread() {
    let Some(db) = live::new_database("proxy_ledger::postgres_compressed").await else {
        return;
    };
    compressed_turns_are_set_against_the_clients_thread(&db.url()).await;
}

#[tokio::test]
async fn an_unknown_conversation_is_404_a_malformed_id_400_and_no_cache_501() {
    let dir = tempfile::tempdir().unwrap();
    let app = condense("http://127.0.0.1:9", &sqlite_url(&dir)).await;
    let unknown = get(&app, "/v1/conversations/0123456789abcdef0123456789abcdef").await;
    unknown.problem(404);
    let malformed = get(&app, "/v1/conversations/not-a-conversation")
        .await
        .problem(400);
    assert_eq!(malformed["type"], "urn:condense:problem:malformed-path");
    assert!(
        malformed["detail"]
            .as_str()
            .unwrap()
            .starts_with("`id` in the path"),
        "{malformed}"
    );
    // Without a cache nothing is kept: the ledger is off, and says so.
    let off = crate::support::common::app();
    let p = get(&off, "/v1/conversations/0123456789abcdef0123456789abcdef")
        .await
        .problem(501);
    assert!(
        p["detail"]
            .as_str()
            .unwrap()
            .contains("CONDENSE_DATABASE_URL"),
        "{p}"
    );
}

fn a_turn(conversation: &str, output: u64) -> condense::cache::Turn {
    condense::cache::Turn {
        conversation: conversation.to_string(),
        route: "/v1/messages",
        provider: "anthropic",
        model: None,
        sent_tokens: Some(100),
        forwarded_tokens: Some(100),
        bill: condense::cache::Bill {
            input: 100,
            output,
            ..Default::default()
        },
        dropped_items: 0,
        summary_call_tokens: None,
        reason: None,
    }
}

/// The ledger is pruned with the summaries: past the row cap the oldest
/// turns go first, and past the TTL every turn.
async fn the_ledger_is_pruned_like_the_summaries(cache: Cache) {
    let (a, b) = ("a".repeat(32), "b".repeat(32));
    for (id, output) in [(&a, 1), (&a, 2), (&b, 3)] {
        cache.append_turn(&a_turn(id, output)).await.unwrap();
    }
    let outputs = |turns: Vec<condense::cache::Recorded>| -> Vec<u64> {
        turns.iter().map(|t| t.turn.bill.output).collect()
    };
    assert_eq!(outputs(cache.turns(&a).await.unwrap()), [1, 2]);
    let year = Duration::from_secs(365 * 24 * 3600);
    assert_eq!(cache.prune(year, 2).await.unwrap(), 1);
    assert_eq!(outputs(cache.turns(&a).await.unwrap()), [2]);
    assert_eq!(outputs(cache.turns(&b).await.unwrap()), [3]);
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert_eq!(cache.prune(Duration::from_millis(1), 100).await.unwrap(), 2);
    assert!(cache.turns(&b).await.unwrap().is_empty());
}

#[tokio::test]
async fn sqlite_the_ledger_is_pruned_like_the_summaries() {
    let dir = tempfile::tempdir().unwrap();
    let cache = Cache::connect(&sqlite_url(&dir), CacheOptions::default()).await;
    the_ledger_is_pruned_like_the_summaries(cache.unwrap()).await;
}

#[tokio::test]
async fn postgres_the_ledger_is_pruned_like_the_summaries() {
    let Some(db) = live::new_database("proxy_ledger::postgres_pruned").await else {
        return;
    };
    let cache = Cache::connect(&db.url(), CacheOptions::default()).await;
    the_ledger_is_pruned_like_the_summaries(cache.unwrap()).await;
}

/// A database that cannot be reached costs the turn, never the answer:
/// the client gets the provider's answer, and the failure is counted.
#[tokio::test]
async fn a_ledger_that_cannot_be_written_leaves_the_answer_alone() {
    let (url, bills) = provider().await;
    let port = crate::support::process::unused_port();
    let app = condense(&url, &format!("postgres://condense@127.0.0.1:{port}/none")).await;
    let reply = turn(&app, &short()[0]).await;
    assert_eq!(reply.json()["content"][0]["text"], "Done.");
    assert_eq!(bills.lock().unwrap().len(), 1);
    let failed = "condense_cache_errors_total";
    for _ in 0..1500 {
        let metrics = get(&app, "/metrics").await.text();
        let s = crate::support::prometheus::parse(&metrics);
        if s.value(failed, &[("backend", "postgres"), ("operation", "ledger")]) == 1.0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the ledger's failure was never counted");
}

/// OpenAI's APIs count the cached part inside the input, name their fields
/// apart, and bill reasoning inside the output: the ledger has them as
/// billed, each under its route.
#[tokio::test]
async fn openai_turns_are_billed_as_chat_and_responses_say() {
    let usage = |input: &str, output: &str| {
        json!({input: 2006, output: 300, format!("{input}_details"): {"cached_tokens": 1920},
               format!("{output}_details"): {"reasoning_tokens": 256}})
    };
    let chat = json!({"id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-4o-2024-08-06",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"},
                     "finish_reason": "stop"}],
        "usage": usage("prompt_tokens", "completion_tokens")});
    let responses = json!({"id": "resp_1", "object": "response", "model": "gpt-5-2025",
        "status": "completed", "output": [], "usage": usage("input_tokens", "output_tokens")});
    let app = Router::new()
        .route(
            "/v1/chat/completions",
            post(move || async move { axum::Json(chat) }),
        )
        .route(
            "/v1/responses",
            post(move || async move { axum::Json(responses) }),
        );
    let url = server::serve_router(app).await;
    let config = condense::Config {
        proxy: condense::config::ProxySettings {
            openai_url: Some(format!("{url}/v1")),
            ..Default::default()
        },
        ..Default::default()
    };
    let dir = tempfile::tempdir().unwrap();
    let cache = Cache::connect(&sqlite_url(&dir), CacheOptions::default()).await;
    let state = condense::AppState::with_cache(config, cache.unwrap()).unwrap();
    let app = condense::http::router(state);
    let billed = json!({"input": 86, "cache_read": 1920, "cache_write_5m": 0,
                        "cache_write_1h": 0, "output": 300, "reasoning": 256});
    for (route, provider, model, body) in [
        (
            "/v1/chat/completions",
            "openai",
            "gpt-4o-2024-08-06",
            json!({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}),
        ),
        (
            "/v1/responses",
            "responses",
            "gpt-5-2025",
            json!({"model": "gpt-5", "input": [{"role": "user", "content": "hi"}]}),
        ),
    ] {
        let reply = crate::support::common::post(&app, route, &body).await;
        assert_eq!(reply.status, 200, "{}", reply.text());
        let id = reply.headers["x-condense-conversation"].to_str().unwrap();
        let ledger = ledger(&app, id, 1).await;
        let t = &ledger["turns"][0];
        assert_eq!(
            (&t["route"], &t["provider"], &t["model"]),
            (&json!(route), &json!(provider), &json!(model))
        );
        assert_eq!(t["billed"], billed, "{route}");
        // Nothing before it: no cached prefix without condense either.
        assert_eq!(t["without_condense"]["cache_read"], 0, "{route}");
        assert_eq!(t["without_condense"]["input"], 2006, "{route}");
    }
}
