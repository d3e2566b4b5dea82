//! Precompute (docs/compression.md, "Precompute"): a summary never costs the agent a
//! turn. Through the proxy, with the real local LLM as summarizer behind a
//! recording relay, and a recording provider: the summary a due turn needs
//! is written on an earlier turn, in the background; the due turn swaps it
//! in without an upstream call (the forwarded thread is that summary and
//! every newer message verbatim); two replicas on one PostgreSQL forward
//! the same bytes with one summary call per summary; the turn that starts a
//! precompute forwards what it would have without it. A summarizer that is
//! slow or fails (a stub: faults the real one will not produce on demand)
//! never delays or fails a request.
use crate::support::recorder::{Exchange, Recorder};
use crate::support::{live, process, prometheus, server};

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use serde_json::{Value, json};
use tokio::sync::Notify;

/// The agent's provider: records each forwarded body, answers a short
/// completion.
type Forwarded = Arc<Mutex<Vec<Bytes>>>;

async fn provider() -> (String, Forwarded) {
    let seen: Forwarded = Arc::default();
    let s = seen.clone();
    let app = Router::new().fallback(move |body: Bytes| {
        let s = s.clone();
        async move {
            s.lock().unwrap().push(body);
            axum::Json(json!({
                "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-4o",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
            }))
        }
    });
    (server::serve_router(app).await, seen)
}

/// N = 30 messages, 4 kept verbatim, any span worth the LLM, short summaries;
/// `off` the same without precompute.
const PROFILES: &str = "[profiles.default]\nmax_messages_before_summary = 30\nmin_recent_messages = 4\nllm_min_tokens = 0\nmax_summary_tokens = 120\n\n[profiles.off]\nmax_messages_before_summary = 30\nmin_recent_messages = 4\nllm_min_tokens = 0\nmax_summary_tokens = 120\nprecompute_at = 0\n";

fn config(dir: &Path, database: &str, upstream: &str, provider: &str) -> condense::Config {
    let profiles = dir.join("profiles.toml");
    std::fs::write(&profiles, PROFILES).unwrap();
    use condense::config::UpstreamSettings;
    use condense::config::{CacheSettings, LimitSettings, ModelSettings, ProxySettings};
    use std::time::Duration;
    condense::Config {
        proxy: ProxySettings {
            openai_url: Some(format!("{provider}/v1")),
            ..Default::default()
        },
        // A tiny model on a shared 2-core machine: generous limits, so that
        // only a hang fails the run.
        upstream: UpstreamSettings {
            url: Some(upstream.to_string()),
            model: "SmolLM2-135M-Instruct".into(),
            context_window: 8192,
            timeout: Duration::from_secs(600),
            retry_budget: Duration::from_secs(900),
            ..Default::default()
        },
        limits: LimitSettings {
            request_timeout: Duration::from_secs(1200),
            ..Default::default()
        },
        cache: CacheSettings {
            database_url: Some(database.to_string()),
            db_acquire_timeout: Duration::from_secs(30),
            ..Default::default()
        },
        models: ModelSettings {
            profiles_file: Some(profiles),
            ..Default::default()
        },
        ..Default::default()
    }
}

fn temp_dir(tag: &str) -> std::path::PathBuf {
    let dir =
        std::env::temp_dir().join(format!("condense-{tag}-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn sqlite(dir: &Path, name: &str) -> String {
    format!("sqlite://{}?mode=rwc", dir.join(name).display())
}

fn user(i: usize) -> Value {
    json!({"role": "user", "content": format!(
        "Step {i} of the Quokkabay port: move parse_{i} from src/old/m{i}.rs to src/new/m{i}.rs, keep its tests green, and tell me what changed."
    )})
}

fn assistant(i: usize) -> Value {
    json!({"role": "assistant", "content": format!(
        "Moved parse_{i} to src/new/m{i}.rs; cargo test passes ({} tests). The old module now re-exports it.", 40 + i
    )})
}

/// Sends the agent's whole history through condense's proxy; the answer's
/// headers, and the body the provider received.
async fn turn(
    client: &reqwest::Client,
    base: &str,
    profile: &str,
    history: &[Value],
    seen: &Forwarded,
) -> (HeaderMap, Bytes) {
    let r = client
        .post(format!("{base}/v1/chat/completions"))
        .header("x-condense-profile", profile)
        .json(&json!({"model": "gpt-4o", "messages": history}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let headers = r.headers().clone();
    let _ = r.bytes().await.unwrap();
    let body = seen.lock().unwrap().last().cloned().expect("forwarded");
    (headers, body)
}

/// The agent's turn of each summary call, in order.
fn turns(recorder: &Recorder) -> Vec<usize> {
    recorder.exchanges().iter().map(|e| e.tag).collect()
}

/// The text the model answered a summary call.
fn answer(call: &Exchange) -> String {
    let answer = call.answer();
    answer["choices"][0]["message"]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn header<'a>(h: &'a HeaderMap, name: &str) -> Option<&'a str> {
    h.get(name).and_then(|v| v.to_str().ok())
}

fn messages(body: &Bytes) -> Vec<Value> {
    let v: Value = serde_json::from_slice(body).unwrap();
    v["messages"].as_array().unwrap().clone()
}

/// Sum of `condense_precompute_jobs_total` over `outcomes`.
fn jobs(s: &prometheus::Scrape, outcomes: &[&str]) -> f64 {
    outcomes
        .iter()
        .map(|o| s.value("condense_precompute_jobs_total", &[("outcome", o)]))
        .sum()
}

const ENDED: [&str; 4] = ["written", "found", "nothing", "failed"];

/// Waits until every background job `base` started has ended (polled, with
/// a generous overall limit for a loaded machine).
async fn idle(client: &reqwest::Client, base: &str) -> prometheus::Scrape {
    for _ in 0..12_000 {
        let s = prometheus::scrape(client, base).await;
        if jobs(&s, &["started"]) == jobs(&s, &ENDED) {
            return s;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("background summaries did not end within 10 minutes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn summaries_written_ahead_are_swapped_in_without_waiting_on_two_replicas() {
    let test = "summaries_written_ahead_are_swapped_in_without_waiting_on_two_replicas";
    let Some(llm) = live::llm(test) else { return };
    let Some(db) = live::new_database(test).await else {
        return;
    };
    let database = db.url();
    let recorder = Recorder::start(&llm).await;
    let upstream = recorder.url.clone();
    let (provider, seen) = provider().await;
    let dir = temp_dir("precompute");
    let a = server::serve(config(&dir, &database, &upstream, &provider)).await;
    let b = server::serve(config(&dir, &database, &upstream, &provider)).await;
    // Precompute off, on a cache of its own: what the proxy forwarded before.
    let off = server::serve(config(
        &dir,
        &sqlite(&dir, "off.sqlite3"),
        &upstream,
        &provider,
    ))
    .await;
    let client = reqwest::Client::new();

    let mut history = vec![json!({"role": "system", "content": "You are a careful coding agent."})];
    // Turn i sends 2i + 1 messages after the system prompt. With N = 30,
    // 4 recent and precompute_at 0.8: 24 or more since the last summary
    // starts one (turn 12: 25 since, cut before the newest 4, so it covers
    // messages 1..22); 30 or more is due (turn 15), and swaps it in; the
    // next starts at turn 22 (45 - 21 = 24 since: covers 22..42) and is
    // due at turn 25 (51 - 21 = 30).
    let (ahead, due) = ([12, 22], [15, 25]);
    let covers = |d: usize| if d == 15 { 22 } else { 42 };
    let mut prefix: Option<Vec<Value>> = None;
    for i in 0..30 {
        history.push(user(i));
        recorder.set_tag(i);
        let (ha, fa) = turn(&client, &a, "default", &history, &seen).await;
        let (hb, fb) = turn(&client, &b, "default", &history, &seen).await;
        assert_eq!(fa, fb, "turn {i}: both replicas forward the same bytes");
        if i < 15 {
            // The turn that starts a precompute (and every one before the
            // first due turn) forwards what it forwards without precompute.
            let (_, fo) = turn(&client, &off, "off", &history, &seen).await;
            assert_eq!(fa, fo, "turn {i}: the same bytes as with precompute off");
            assert_eq!(messages(&fa), history, "turn {i}: nothing is due yet");
        }
        let state = header(&ha, "x-condense-precompute");
        if ahead.contains(&i) {
            assert_eq!(state, Some("started"), "turn {i}");
        }
        if due.contains(&i) {
            assert_eq!(state, Some("used"), "turn {i}: the summary written ahead");
            // The second replica finds it already indexed as the summary
            // this turn carries (A swapped it in first): the same bytes.
            let reused = header(&hb, "x-condense-prefix-reused") == Some("true");
            assert!(
                reused || header(&hb, "x-condense-precompute") == Some("used"),
                "{hb:?}"
            );
            assert_eq!(header(&hb, "x-condense-summary-call-tokens"), Some("0"));
            assert_eq!(header(&ha, "x-condense-summary-call-tokens"), Some("0"));
            assert_eq!(header(&ha, "x-condense-prefix-reused"), Some("false"));
            assert_eq!(header(&ha, "x-condense-compressed"), Some("true"));
            let removed: usize = header(&ha, "x-condense-tokens-removed")
                .unwrap()
                .parse()
                .unwrap();
            assert!(removed > 0, "turn {i}: the summary took tokens out");
            // The due turn waited for no upstream call: every one the relay
            // saw came during an earlier turn.
            let turns = turns(&recorder);
            assert!(turns.iter().all(|&t| t != i), "turn {i}: {turns:?}");
            // The precomputed summary, then every newer message verbatim.
            let m = messages(&fa);
            let cut = covers(i);
            assert_eq!(m[0], history[0], "the system prompt is pinned");
            assert_eq!(
                &m[2..],
                &history[cut..],
                "turn {i}: newer messages verbatim"
            );
            let text = m[1]["content"].as_str().unwrap();
            assert!(
                text.starts_with(&format!(
                    "[Context Summary - {} previous messages]",
                    cut - 1
                )),
                "{text}"
            );
            // Its text is what the model wrote on the earlier turn.
            let written = answer(recorder.exchanges().last().expect("written ahead"));
            let content = text.split_once("\n\n").map_or("", |(_, c)| c).trim();
            let opening: String = content.chars().take(25).collect();
            assert!(
                !opening.is_empty() && written.contains(&opening),
                "turn {i}: the summary is the one written ahead:\n{text}\n---\n{written}"
            );
            prefix = Some(m[..2].to_vec());
        } else if let Some(p) = &prefix {
            // Later turns forward the same prefix, byte for byte.
            let m = messages(&fa);
            assert_eq!(&m[..2], &p[..], "turn {i}: the prefix stays");
            assert_eq!(
                header(&ha, "x-condense-prefix-reused"),
                Some("true"),
                "turn {i}"
            );
        }
        // Event-driven: the background summary this turn started (if any)
        // ends before the agent's next turn.
        idle(&client, &a).await;
        idle(&client, &b).await;
        history.push(assistant(i));
    }
    assert_eq!(
        turns(&recorder),
        ahead,
        "one summary call per summary, on the turn that started it, over both replicas"
    );
    let due_turns = |s: &prometheus::Scrape, result| {
        s.value("condense_precompute_due_turns_total", &[("result", result)])
    };
    let (sa, sb) = (
        prometheus::scrape(&client, &a).await,
        prometheus::scrape(&client, &b).await,
    );
    assert_eq!(due_turns(&sa, "used"), 2.0);
    for s in [&sa, &sb] {
        assert_eq!(due_turns(s, "waited") + due_turns(s, "pending"), 0.0);
    }
}

/// A summarizer that holds every call until released, then fails it (500):
/// the faults the real one will not produce on demand.
#[derive(Clone, Default)]
struct Stuck {
    /// Calls received.
    calls: Arc<AtomicUsize>,
    /// Signalled on each call received.
    arrived: Arc<Notify>,
    /// Set: calls fail at once instead of being held.
    released: Arc<std::sync::atomic::AtomicBool>,
    release: Arc<Notify>,
}

async fn stuck(State(s): State<Stuck>) -> impl IntoResponse {
    s.calls.fetch_add(1, Ordering::SeqCst);
    s.arrived.notify_one();
    if !s.released.load(Ordering::SeqCst) {
        s.release.notified().await;
    }
    (StatusCode::INTERNAL_SERVER_ERROR, "down")
}

/// N = 10, 2 kept verbatim: turn i sends 2i + 1 messages; turn 4 (9 since)
/// starts a precompute, turn 5 (11) is due.
const SHORT: &str = "[profiles.default]\nmax_messages_before_summary = 10\nmin_recent_messages = 2\nllm_min_tokens = 0\nmax_summary_tokens = 120\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_or_failing_precompute_never_delays_or_fails_a_request() {
    let s = Stuck::default();
    let upstream = server::serve_router(Router::new().fallback(stuck).with_state(s.clone())).await;
    let (provider, seen) = provider().await;
    let dir = temp_dir("precompute-stuck");
    let profiles = dir.join("short.toml");
    std::fs::write(&profiles, SHORT).unwrap();
    let mut config = config(&dir, &sqlite(&dir, "c.sqlite3"), &upstream, &provider);
    config.upstream.max_retries = 0;
    config.upstream.precompute_concurrency = 1;
    config.models.profiles_file = Some(profiles);
    let base = server::serve(config).await;
    let client = reqwest::Client::new();
    let mut history = vec![json!({"role": "system", "content": "You are a careful coding agent."})];
    for i in 0..4 {
        history.push(user(i));
        let (h, body) = turn(&client, &base, "default", &history, &seen).await;
        assert_eq!(messages(&body), history);
        assert_eq!(header(&h, "x-condense-precompute"), None, "turn {i}");
        history.push(assistant(i));
    }
    history.push(user(4));
    let (h, body) = turn(&client, &base, "default", &history, &seen).await;
    assert_eq!(header(&h, "x-condense-precompute"), Some("started"));
    assert_eq!(
        messages(&body),
        history,
        "the turn that starts it forwards as before"
    );
    // The summarizer holds the call: the request above was answered while
    // it did, and so is the due turn.
    while s.calls.load(Ordering::SeqCst) == 0 {
        s.arrived.notified().await;
    }
    history.push(assistant(4));
    history.push(user(5));
    let (h, body) = turn(&client, &base, "default", &history, &seen).await;
    assert_eq!(
        header(&h, "x-condense-precompute"),
        Some("pending"),
        "due, not ready, fits"
    );
    assert_eq!(
        messages(&body),
        history,
        "forwarded without waiting, unchanged"
    );
    assert_eq!(
        s.calls.load(Ordering::SeqCst),
        1,
        "the due turn made no call of its own"
    );
    // Another conversation crossing meanwhile: the one slot is taken.
    let other: Vec<Value> = history
        .iter()
        .map(|m| {
            let mut m = m.clone();
            let text = m["content"]
                .as_str()
                .unwrap()
                .replace("Quokkabay", "Marlinford");
            m["content"] = text.into();
            m
        })
        .take(10)
        .collect();
    let (h, body) = turn(&client, &base, "default", &other, &seen).await;
    assert_eq!(header(&h, "x-condense-precompute"), Some("skipped"));
    assert_eq!(messages(&body), other);
    // Now it fails: logged and counted, never a request's problem.
    s.released.store(true, Ordering::SeqCst);
    s.release.notify_waiters();
    let metrics = idle(&client, &base).await;
    assert_eq!(jobs(&metrics, &["failed"]), 1.0);
    assert_eq!(jobs(&metrics, &["skipped_busy"]), 1.0);
    history.push(assistant(5));
    history.push(user(6));
    let (h, body) = turn(&client, &base, "default", &history, &seen).await;
    assert_eq!(
        header(&h, "x-condense-precompute"),
        Some("pending"),
        "still due, a new one started"
    );
    assert_eq!(messages(&body), history);
    let metrics = idle(&client, &base).await;
    assert_eq!(jobs(&metrics, &["failed"]), 2.0);
    assert_eq!(
        metrics.value(
            "condense_precompute_due_turns_total",
            &[("result", "pending")]
        ),
        2.0
    );
}

/// Four turns of a conversation, then the fifth, on which a summary is
/// started ahead (the `SHORT` profile); the history sent last.
async fn started_ahead(client: &reqwest::Client, base: &str, seen: &Forwarded) -> Vec<Value> {
    let mut history = vec![json!({"role": "system", "content": "You are a careful coding agent."})];
    for i in 0..4 {
        history.push(user(i));
        turn(client, base, "default", &history, seen).await;
        history.push(assistant(i));
    }
    history.push(user(4));
    let (h, _) = turn(client, base, "default", &history, seen).await;
    assert_eq!(header(&h, "x-condense-precompute"), Some("started"));
    history
}

/// A summarizer that reads a call and then only waits: it says when the
/// call arrived, and when its connection was closed (by the caller, since
/// it never answers).
async fn silent_summarizer() -> (String, Arc<Notify>, Arc<Notify>) {
    use tokio::io::AsyncReadExt;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (arrived, closed) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
    let (a, c) = (arrived.clone(), closed.clone());
    tokio::spawn(async move {
        let (mut conn, _) = listener.accept().await.unwrap();
        let mut buf = vec![0u8; 64 * 1024];
        let mut told = false;
        loop {
            match conn.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(_) if !told => {
                    told = true;
                    a.notify_one();
                }
                Ok(_) => {}
            }
        }
        c.notify_one();
    });
    (url, arrived, closed)
}

/// Shutdown aborts a summary being written ahead: its upstream call is
/// dropped (the summarizer sees its connection close) instead of running
/// on to its time limit (ten minutes here) after serving has stopped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_aborts_the_summaries_being_written_ahead() {
    let (upstream, arrived, closed) = silent_summarizer().await;
    let (provider, seen) = provider().await;
    let dir = temp_dir("precompute-shutdown");
    let profiles = dir.join("short.toml");
    std::fs::write(&profiles, SHORT).unwrap();
    let mut config = config(&dir, &sqlite(&dir, "c.sqlite3"), &upstream, &provider);
    config.upstream.max_retries = 0;
    config.models.profiles_file = Some(profiles);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let (addr, server) = server::serve_until(config, async {
        let _ = stopped.await;
    })
    .await;
    let base = format!("http://{addr}");
    // A client without kept-alive connections: serving can end as soon as
    // the requests have.
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    started_ahead(&client, &base, &seen).await;
    arrived.notified().await;
    stop.send(()).unwrap();
    // Generous: the job would hold its call for ten minutes.
    tokio::time::timeout(Duration::from_secs(120), closed.notified())
        .await
        .expect("the summary written ahead was aborted at shutdown");
    tokio::time::timeout(Duration::from_secs(120), server)
        .await
        .expect("serving ended")
        .unwrap()
        .unwrap();
}

/// `POST /v1/compress` for a direct caller (its whole history every call).
async fn compress(client: &reqwest::Client, base: &str, body: &Value) -> (u16, Value) {
    let r = client
        .post(format!("{base}/v1/compress"))
        .json(body)
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.json().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_direct_caller_asks_for_precompute_and_gets_202_then_the_swap() {
    let test = "a_direct_caller_asks_for_precompute_and_gets_202_then_the_swap";
    let Some(llm) = live::llm(test) else { return };
    let recorder = Recorder::start(&llm).await;
    let upstream = recorder.url.clone();
    let (provider, _) = provider().await;
    let dir = temp_dir("precompute-api");
    let base = server::serve(config(
        &dir,
        &sqlite(&dir, "c.sqlite3"),
        &upstream,
        &provider,
    ))
    .await;
    let client = reqwest::Client::new();
    let settings = json!({
        "max_messages_before_summary": 12, "min_recent_messages": 4,
        "llm_min_tokens": 0, "max_summary_tokens": 80
    });
    let mut history = vec![json!({"role": "system", "content": "You are a careful coding agent."})];
    for i in 0..5 {
        history.push(user(i));
        history.push(assistant(i));
    }
    history.push(user(5));
    // 11 messages since the system prompt: past 0.8 of N = 12, not due.
    recorder.set_tag(5);
    let body = json!({"messages": history, "config": settings, "precompute": true});
    let (status, v) = compress(&client, &base, &body).await;
    assert_eq!(status, 202, "{v}");
    assert_eq!(v["precompute"], "started");
    assert_eq!(v["compressed"], false);
    assert_eq!(
        v["messages"].as_array().unwrap(),
        &history,
        "nothing due: the thread as it came"
    );
    idle(&client, &base).await;
    // Due (13 since): the summary written ahead, for the 12 messages that
    // call had less its newest 4, then every newer message verbatim.
    history.push(assistant(5));
    history.push(user(6));
    recorder.set_tag(6);
    let body = json!({"messages": history, "config": settings, "precompute": true});
    let (status, v) = compress(&client, &base, &body).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["precompute"], "used", "{v}");
    assert_eq!(v["compressed"], true);
    assert_eq!(v["summary"]["cached"], true);
    assert_eq!(v["summary"]["messages_summarized"], 7);
    assert_eq!(v["usage"], Value::Null, "no call waited for");
    let m = v["messages"].as_array().unwrap();
    assert_eq!(m[0], history[0]);
    assert_eq!(&m[2..], &history[8..]);
    assert_eq!(
        turns(&recorder),
        [5],
        "one summary call, on the call that started it"
    );
}

#[tokio::test]
async fn precompute_at_must_be_a_share_below_one() {
    let dir = temp_dir("precompute-422");
    let mut config = condense::Config::default();
    config.cache.database_url = Some("off".into());
    config.cache.path = dir.join("unused.sqlite3");
    let base = server::serve(config).await;
    let client = reqwest::Client::new();
    for bad in [json!(1), json!(-0.5), json!("off")] {
        let body = json!({
            "messages": [{"role": "user", "content": "hi"}],
            "config": {"precompute_at": bad}
        });
        let (status, v) = compress(&client, &base, &body).await;
        assert_eq!(status, 422, "{bad}: {v}");
        assert!(
            v.to_string().contains("/config/precompute_at"),
            "{bad}: {v}"
        );
    }
    let body = json!({"messages": [{"role": "user", "content": "hi"}], "precompute": null});
    let (status, v) = compress(&client, &base, &body).await;
    assert_eq!(status, 422, "{v}");
}

/// A process stopped (SIGTERM) while it writes a summary ahead gives the
/// job's claim up: restarted on the same cache, the conversation's next
/// turn starts the job at once rather than waiting out the claim's lease
/// (an hour here).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_finds_the_stopped_jobs_claim_given_up() {
    let (provider, seen) = provider().await;
    let dir = temp_dir("precompute-restart");
    std::fs::write(dir.join("short.toml"), SHORT).unwrap();
    let database = sqlite(&dir, "c.sqlite3");
    let env = |upstream: &str| -> Vec<(String, String)> {
        [
            ("CONDENSE_LISTEN", "127.0.0.1:0"),
            ("CONDENSE_DATABASE_URL", database.as_str()),
            ("CONDENSE_CACHE_CLAIM_LEASE", "3600s"),
            ("CONDENSE_UPSTREAM_URL", upstream),
            ("CONDENSE_UPSTREAM_MODEL", "SmolLM2-135M-Instruct"),
            ("CONDENSE_UPSTREAM_MAX_RETRIES", "0"),
            ("CONDENSE_UPSTREAM_TIMEOUT", "600"),
            ("CONDENSE_UPSTREAM_RETRY_BUDGET", "900"),
            ("CONDENSE_REQUEST_TIMEOUT", "1200"),
            ("CONDENSE_PROXY_OPENAI_URL", &format!("{provider}/v1")),
            (
                "CONDENSE_PROFILES_FILE",
                dir.join("short.toml").to_str().unwrap(),
            ),
        ]
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .to_vec()
    };
    let client = reqwest::Client::new();
    let (upstream, arrived, _) = silent_summarizer().await;
    let mut first = process::Process::start(&[], &env(&upstream), &dir);
    let history = started_ahead(&client, &first.url(), &seen).await;
    arrived.notified().await;
    first.terminate();

    let (upstream, arrived, _) = silent_summarizer().await;
    let again = process::Process::start(&[], &env(&upstream), &dir);
    let (h, _) = turn(&client, &again.url(), "default", &history, &seen).await;
    assert_eq!(header(&h, "x-condense-precompute"), Some("started"));
    let written = tokio::time::timeout(Duration::from_secs(120), arrived.notified()).await;
    assert!(
        written.is_ok(),
        "the restarted process did not write the summary ahead:\n{}",
        again.output()
    );
}
