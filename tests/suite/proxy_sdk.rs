//! The proxy with real clients and a real provider: the official `openai`
//! and `anthropic` Python SDKs (`tests/sdk/scenarios.py`) with their base
//! URL set to condense, condense in front of the local model
//! (`llama-server`, which speaks both APIs), and a recording relay between
//! them that keeps every request exactly as it reached the provider.
use crate::support::recorder::Recorder;
use crate::support::{live, server};

use std::path::PathBuf;
use std::process::Command;

use axum::Router;
use axum::body::Bytes;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use serde_json::{Value, json};

/// What reached the provider, in order: each request's path and query.
fn targets(seen: &Recorder) -> Vec<String> {
    seen.exchanges().into_iter().map(|e| e.target).collect()
}

/// Each request's body, parsed.
fn bodies(seen: &Recorder) -> Vec<Value> {
    let calls = seen.exchanges();
    calls
        .iter()
        .map(|e| serde_json::from_slice(&e.request).unwrap())
        .collect()
}

/// Each request's body, byte for byte.
fn raw(seen: &Recorder) -> Vec<Bytes> {
    seen.exchanges().into_iter().map(|e| e.request).collect()
}

/// A provider that answers every request with `status` and a JSON error.
async fn failing_provider(status: StatusCode) -> String {
    let app = Router::new().fallback(move || async move {
        let body = json!({"type": "error", "error": {"type": "stub", "message": format!("stub says {status}")}});
        (status, [("retry-after", "7")], axum::Json(body)).into_response()
    });
    server::serve_router(app).await
}

/// Condense on a free port, proxying both routes to `provider`, with a
/// SQLite cache and a `short` profile (N = 10, 4 recent messages kept,
/// every due summary written, paying or not: the SDKs are tested here).
async fn condense(provider: &str) -> String {
    let dir = std::env::temp_dir().join(format!("condense-sdk-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let profiles = dir.join("profiles.toml");
    std::fs::write(
        &profiles,
        "[profiles.short]\nmax_messages_before_summary = 10\nmin_recent_messages = 4\nmax_summary_tokens = 200\nmax_payback_turns = 1000000\n",
    )
    .unwrap();
    server::serve(condense::Config {
        models: condense::config::ModelSettings {
            profiles_file: Some(profiles),
            ..Default::default()
        },
        cache: condense::config::CacheSettings {
            database_url: Some(format!(
                "sqlite://{}?mode=rwc",
                dir.join("c.sqlite3").display()
            )),
            ..Default::default()
        },
        proxy: condense::config::ProxySettings {
            openai_url: Some(format!("{provider}/v1")),
            anthropic_url: Some(provider.to_string()),
            ..Default::default()
        },
        ..Default::default()
    })
    .await
}

/// The SDKs, or None when the run opted out of live parts.
pub(crate) fn sdks(test: &str) -> Option<()> {
    let ok = Command::new("python3")
        .args(["-c", "import openai, anthropic"])
        .status()
        .is_ok_and(|s| s.success());
    if ok {
        return Some(());
    }
    live::llm(test)?; // the same opt-out
    panic!(
        "{test} needs the official Python SDKs: python3 -m pip install -r tests/sdk/requirements.txt \
         (./scripts/test.sh installs them); CONDENSE_TEST_SKIP_LIVE=1 skips such tests"
    );
}

/// Condense in front of a recorder in front of the local model: condense's
/// URL, the recorder's, and what the recorder saw. None when the run opted
/// out of live parts.
async fn through_a_recorder(test: &str) -> Option<(String, String, Recorder)> {
    let llm = live::llm(test)?;
    sdks(test)?;
    let seen = Recorder::start(&live::origin(&llm)).await;
    let url = condense(&seen.url).await;
    Some((url, seen.url.clone(), seen))
}

/// Runs one scenario of `tests/sdk/scenarios.py` and returns what it printed.
fn scenario(name: &str, sdk: &str, condense: &str, provider: &str) -> Value {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/sdk/scenarios.py");
    let out = Command::new("python3")
        .arg(script)
        .args([name, sdk, condense, provider])
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "{name}/{sdk} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("one JSON object")
}

/// Messages of a forwarded body (after Anthropic's top-level system).
fn messages(body: &Value) -> &Vec<Value> {
    body["messages"].as_array().expect("messages")
}

fn is_summary(m: &Value) -> bool {
    m["content"]
        .as_str()
        .is_some_and(|c| c.starts_with("[Context Summary"))
}

/// Every tool result answers a call made earlier in the same thread.
fn tool_pairs_intact(msgs: &[Value]) -> bool {
    let mut calls = std::collections::HashSet::new();
    for m in msgs {
        for c in m["tool_calls"].as_array().into_iter().flatten() {
            calls.insert(c["id"].as_str().unwrap().to_string());
        }
        if let Some(id) = m["tool_call_id"].as_str()
            && !calls.contains(id)
        {
            return false;
        }
        for b in m["content"].as_array().into_iter().flatten() {
            match b["type"].as_str() {
                Some("tool_use") => {
                    calls.insert(b["id"].as_str().unwrap().to_string());
                }
                Some("tool_result") if !calls.contains(b["tool_use_id"].as_str().unwrap()) => {
                    return false;
                }
                _ => {}
            }
        }
    }
    true
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_sdks_through_the_proxy() {
    let Some((url, provider, seen)) = through_a_recorder("both_sdks_through_the_proxy").await
    else {
        return;
    };

    for sdk in ["openai", "anthropic"] {
        // A long thread that is due arrives compressed and valid.
        let out = scenario("due", sdk, &url, &provider);
        assert_eq!(
            out["headers"]["x-condense-compressed"], "true",
            "{sdk}: {out}"
        );
        let body = bodies(&seen).pop().unwrap();
        let msgs = messages(&body);
        let at = if sdk == "openai" { 1 } else { 0 };
        assert!(
            is_summary(&msgs[at]),
            "{sdk}: a summary after the pinned prefix: {}",
            msgs[at]
        );
        assert!(msgs.len() < 42, "{sdk}: {} messages forwarded", msgs.len());
        assert!(tool_pairs_intact(msgs), "{sdk}: tool pairs intact");

        // Shadow mode forwards the very bytes the SDK sent.
        let out = scenario("shadow", sdk, &url, &provider);
        assert_eq!(out["headers"]["x-condense-shadow"], "true", "{out}");
        assert_eq!(out["headers"]["x-condense-would-compress"], "true", "{out}");
        let raw = raw(&seen);
        assert_eq!(
            raw[raw.len() - 2],
            raw[raw.len() - 1],
            "{sdk}: shadow forwards byte-identical requests"
        );

        // A stream arrives in chunks as the model writes it.
        let out = scenario("stream", sdk, &url, &provider);
        assert!(out["chunks"].as_u64().unwrap() > 2, "{sdk}: {out}");
        assert!(!out["text"].as_str().unwrap().is_empty(), "{sdk}: {out}");
        assert_eq!(bodies(&seen).pop().unwrap()["stream"], true);

        // The provider's own 400 (a request over the model's window) reaches the SDK as such.
        let out = scenario("errors", sdk, &url, &provider);
        assert_eq!(out["over_window"]["status"], 400, "{sdk}: {out}");
        assert_eq!(
            out["over_window"]["error"], "BadRequestError",
            "{sdk}: {out}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limits_and_server_errors_reach_the_sdks_unchanged() {
    let test = "rate_limits_and_server_errors_reach_the_sdks_unchanged";
    let Some(_) = live::llm(test) else { return };
    let Some(()) = sdks(test) else { return };
    for (status, error) in [
        (StatusCode::TOO_MANY_REQUESTS, "RateLimitError"),
        (StatusCode::INTERNAL_SERVER_ERROR, "InternalServerError"),
    ] {
        let provider = failing_provider(status).await;
        let url = condense(&provider).await;
        for sdk in ["openai", "anthropic"] {
            let out = scenario("errors", sdk, &url, &provider);
            let got = &out["status"];
            assert_eq!(got["status"], status.as_u16(), "{sdk}: {out}");
            assert_eq!(got["error"], error, "{sdk}: {out}");
            assert!(
                got["body"].as_str().unwrap().contains("stub says"),
                "{sdk}: the provider's body: {out}"
            );
        }
    }
}

/// Twenty turns of one agent resending its whole history: a summary at most
/// once per N - min_recent_messages new messages, and between two summaries
/// the forwarded thread only grows at its end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_keeps_its_forwarded_prefix_between_summaries() {
    let Some((url, provider, seen)) =
        through_a_recorder("a_session_keeps_its_forwarded_prefix_between_summaries").await
    else {
        return;
    };
    let out = scenario("session", "openai", &url, &provider);
    let turns = out["turns"].as_array().unwrap();
    assert_eq!(turns.len(), 20);
    let bodies = bodies(&seen);
    assert_eq!(bodies.len(), 20);

    let (mut summaries, mut kept_bytes, mut continued) = (0, 0usize, 0);
    let mut last_summary: Option<Value> = None;
    for (i, body) in bodies.iter().enumerate() {
        let msgs = messages(body);
        let summary = msgs.get(1).filter(|m| is_summary(m)).cloned();
        if summary.is_some() && summary != last_summary {
            summaries += 1;
        } else if summary.is_some() {
            // The same summary as the turn before: the turn before's
            // forwarded thread is a prefix of this one, message for message.
            let before = messages(&bodies[i - 1]);
            let same = before
                .iter()
                .zip(msgs)
                .all(|(a, b)| serde_json::to_vec(a).unwrap() == serde_json::to_vec(b).unwrap());
            assert!(
                same && msgs.len() > before.len(),
                "turn {i}: the forwarded prefix changed"
            );
            kept_bytes += before.iter().map(|m| m.to_string().len()).sum::<usize>();
            continued += 1;
        }
        last_summary = summary;
    }
    // The session adds 2 messages a turn to a thread of 13: 40 new messages.
    eprintln!(
        "session: {} turns, {summaries} summaries, {continued} turns with the previous prefix kept ({kept_bytes} bytes of forwarded prefix identical to the turn before)",
        turns.len()
    );
    assert!(summaries >= 1, "a 53-message session is due at least once");
    assert!(summaries <= 1 + 40 / (10 - 4), "{summaries} summaries");
    assert!(continued >= 5, "{continued} continued turns");
}

/// The SDKs' own counts (`client.messages.count_tokens`,
/// `client.responses.input_tokens.count`) reach the provider's counting
/// endpoint with the thread condense would forward: a due thread counts
/// fewer tokens through condense than at the provider, and the thread
/// counted is the one the next request forwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sdks_count_what_condense_would_forward() {
    let Some((url, provider, seen)) =
        through_a_recorder("the_sdks_count_what_condense_would_forward").await
    else {
        return;
    };
    for (sdk, endpoint, thread) in [
        ("anthropic", "/v1/messages/count_tokens", "messages"),
        ("responses", "/v1/responses/input_tokens", "input"),
    ] {
        let before = bodies(&seen).len();
        let out = scenario("count", sdk, &url, &provider);
        assert_eq!(
            out["headers"]["x-condense-compressed"], "true",
            "{sdk}: {out}"
        );
        let (through, direct) = (&out["input_tokens"], &out["direct"]);
        assert!(
            through.as_u64().unwrap() < direct.as_u64().unwrap(),
            "{sdk}: {through} tokens through condense, {direct} at the provider"
        );
        let targets = &targets(&seen)[before..];
        assert_eq!(targets[..2], [endpoint, endpoint], "{sdk}: {targets:?}");
        let bodies = &bodies(&seen)[before..];
        assert!(bodies[0].get("max_tokens").is_none(), "{sdk}: a count body");
        assert_eq!(
            bodies[0][thread], bodies[2][thread],
            "{sdk}: the thread counted is the thread then sent"
        );
        assert_ne!(bodies[0][thread], bodies[1][thread], "{sdk}: compressed");
    }
}

/// A mid-conversation system message (Claude Code sends them inside
/// Anthropic's `messages`) is read, kept verbatim right after the summary,
/// and the provider accepts the thread.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mid_conversation_system_messages_stay_beside_the_summary() {
    let Some((url, provider, seen)) =
        through_a_recorder("mid_conversation_system_messages_stay_beside_the_summary").await
    else {
        return;
    };
    for sdk in ["anthropic", "openai"] {
        let out = scenario("instructions", sdk, &url, &provider);
        assert_eq!(
            out["headers"]["x-condense-compressed"], "true",
            "{sdk}: {out}"
        );
        let body = bodies(&seen).pop().unwrap();
        let msgs = messages(&body);
        let at = msgs.iter().position(is_summary).expect("a summary");
        assert_eq!(
            msgs[at + 1],
            serde_json::json!({"role": "system", "content": "From now on, run the tests before every commit."}),
            "{sdk}: the instruction, verbatim, right after the summary"
        );
        let summary = msgs[at].to_string();
        assert!(!summary.contains("run the tests"), "{sdk}: not summarized");
        assert!(tool_pairs_intact(msgs), "{sdk}");
    }
}

/// A query string the SDK adds (`extra_query`; Claude Code sends
/// `?beta=true`) reaches the provider as it came.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn query_strings_reach_the_provider() {
    let Some((url, provider, seen)) = through_a_recorder("query_strings_reach_the_provider").await
    else {
        return;
    };
    for (sdk, path) in [
        ("anthropic", "/v1/messages"),
        ("openai", "/v1/chat/completions"),
        ("responses", "/v1/responses"),
    ] {
        scenario("query", sdk, &url, &provider);
        let target = targets(&seen).pop().unwrap();
        assert_eq!(
            target,
            format!("{path}?beta=true&api-version=2024-10-21"),
            "{sdk}"
        );
    }
}

/// Every output item answers a function call made earlier in the items,
/// and every reasoning item is followed by the item it came with.
fn items_intact(items: &[Value]) -> bool {
    let mut calls = std::collections::HashSet::new();
    for (i, item) in items.iter().enumerate() {
        match item["type"].as_str() {
            Some("function_call") => {
                calls.insert(item["call_id"].as_str().unwrap().to_string());
            }
            Some("function_call_output") if !calls.contains(item["call_id"].as_str().unwrap()) => {
                return false;
            }
            Some("reasoning") if items.get(i + 1).is_none() => return false,
            _ => {}
        }
    }
    true
}

/// The openai SDK's Responses API through `POST /v1/responses`: a due
/// thread reaches the provider compressed (reasoning items byte for byte,
/// calls with their outputs, `instructions` untouched), shadow mode
/// forwards the SDK's very bytes, and a session keeps its forwarded prefix
/// between summaries.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_responses_api_through_the_proxy() {
    let Some((url, provider, seen)) =
        through_a_recorder("the_responses_api_through_the_proxy").await
    else {
        return;
    };
    let out = scenario("due", "responses", &url, &provider);
    assert_eq!(out["headers"]["x-condense-compressed"], "true", "{out}");
    let body = bodies(&seen).pop().unwrap();
    assert_eq!(body["instructions"], json!(SYSTEM_PROMPT));
    let items = body["input"].as_array().expect("input items");
    assert!(is_summary(&items[0]), "a summary first: {}", items[0]);
    assert!(items.len() < 51, "{} items forwarded", items.len());
    assert!(items_intact(items), "calls, outputs and reasoning intact");
    let sent: Vec<Value> = serde_json::from_str::<Value>(&python_items(10))
        .unwrap()
        .as_array()
        .unwrap()
        .clone();
    for item in &items[1..] {
        assert!(sent.contains(item), "an item changed on the way: {item}");
    }

    let out = scenario("shadow", "responses", &url, &provider);
    assert_eq!(out["headers"]["x-condense-would-compress"], "true", "{out}");
    let raw = raw(&seen);
    assert_eq!(
        raw[raw.len() - 2],
        raw[raw.len() - 1],
        "shadow forwards byte-identical requests"
    );

    let before = bodies(&seen).len();
    let out = scenario("session", "responses", &url, &provider);
    assert_eq!(out["turns"].as_array().unwrap().len(), 20);
    let bodies = &bodies(&seen)[before..];
    let mut continued = 0;
    for pair in bodies.windows(2) {
        let (a, b) = (
            pair[0]["input"].as_array().unwrap(),
            pair[1]["input"].as_array().unwrap(),
        );
        if is_summary(&a[0]) && a[0] == b[0] {
            let same = a
                .iter()
                .zip(b)
                .all(|(x, y)| serde_json::to_vec(x).unwrap() == serde_json::to_vec(y).unwrap());
            assert!(same && b.len() > a.len(), "the forwarded prefix changed");
            continued += 1;
        }
    }
    assert!(continued >= 5, "{continued} continued turns");
}

/// The instructions the scenarios send.
const SYSTEM_PROMPT: &str = "You are a careful coding agent. Answer in one short sentence.";

/// The items `tests/sdk/scenarios.py` builds for `units` rounds.
fn python_items(units: usize) -> String {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/sdk");
    let out = Command::new("python3")
        .current_dir(script)
        .args([
            "-c",
            &format!(
                "import json, scenarios; print(json.dumps(scenarios.response_items({units})))"
            ),
        ])
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}
