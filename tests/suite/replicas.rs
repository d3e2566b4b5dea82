//! Scaling out, shown on one machine: three condense processes on their own
//! ports share one PostgreSQL (`DATABASE_URL`) and the real local LLM, and
//! nothing else. Requests for three distinct spans are spread over all three
//! at once; each span costs exactly one upstream call, every answer carries
//! the same summary bytes, and a second round answers byte-identical bodies
//! from every replica without calling the LLM again.
//!
//! Upstream calls are counted by a relay in front of the real LLM (not a
//! stub), so the summaries are the model's own. The run prints its figures.
use crate::support::recorder::Recorder;
use crate::support::{live, process};

use std::collections::BTreeMap;
use std::io::Write;

use axum::body::Bytes;
use serde_json::{Value, json};

const REPLICAS: usize = 3;
/// One project name per span: it appears in every message of its thread, so
/// the relay can tell which span a prompt is for.
const SPANS: [&str; 3] = ["Zephyrine", "Quokkabay", "Marlinford"];
/// Requests per span per replica in the concurrent round.
const PER_REPLICA: usize = 2;
const MODEL: &str = "SmolLM2-135M-Instruct";

/// Calls per span label in what the relay saw: the span whose project name
/// the prompt carries ("?" when none or several match).
fn calls(recorder: &Recorder) -> BTreeMap<String, usize> {
    let mut calls = BTreeMap::new();
    for call in recorder.exchanges() {
        let text = String::from_utf8_lossy(&call.request);
        let labels: Vec<&str> = SPANS.iter().copied().filter(|s| text.contains(s)).collect();
        let label = match labels.as_slice() {
            [one] => one.to_string(),
            _ => "?".to_string(),
        };
        *calls.entry(label).or_default() += 1;
    }
    calls
}

/// A short coding thread about `project`: one chunk for the model's window.
fn thread(project: &str) -> Value {
    let messages: Vec<Value> = (0..12)
        .map(|i| {
            if i % 2 == 0 {
                json!({"role": "user", "content": format!(
                    "{project}: step {i}. Rename parse_{i} to read_{i} in src/{}/mod{i}.rs and keep the tests green.",
                    project.to_lowercase()
                )})
            } else {
                json!({"role": "assistant", "content": format!(
                    "Done for {project}: read_{i} replaces parse_{i}; cargo test passes ({} tests).",
                    10 + i
                )})
            }
        })
        .collect();
    json!({
        "messages": messages,
        "force": true,
        "summarizer": {"strategy": "llm"},
        "config": {"max_summary_tokens": 120}
    })
}

fn env(database: &str, upstream: &str) -> Vec<(String, String)> {
    [
        ("CONDENSE_LISTEN", "127.0.0.1:0"),
        ("CONDENSE_LOG_FORMAT", "json"),
        ("CONDENSE_DATABASE_URL", database),
        ("CONDENSE_UPSTREAM_URL", upstream),
        ("CONDENSE_UPSTREAM_MODEL", MODEL),
        // The model's trained window.
        ("CONDENSE_UPSTREAM_CONTEXT_WINDOW", "8192"),
        // A tiny model on a shared 2-core machine: generous limits, so that
        // only a hang fails the run.
        ("CONDENSE_UPSTREAM_TIMEOUT", "600"),
        ("CONDENSE_UPSTREAM_RETRY_BUDGET", "900"),
        ("CONDENSE_REQUEST_TIMEOUT", "1200"),
        ("CONDENSE_DB_ACQUIRE_TIMEOUT", "30s"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

/// `(status, raw body)` of one `/v1/compress` call.
async fn compress(client: &reqwest::Client, base: &str, body: &Value) -> (u16, Bytes) {
    let r = client
        .post(format!("{base}/v1/compress"))
        .json(body)
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.bytes().await.unwrap())
}

/// Sends every span to every replica, all at once; the raw bodies by span.
async fn round(
    bases: &[String],
    per_replica: usize,
) -> BTreeMap<&'static str, Vec<(usize, Bytes)>> {
    let client = reqwest::Client::new();
    let mut tasks = Vec::new();
    for span in SPANS {
        for (replica, base) in bases.iter().enumerate() {
            for _ in 0..per_replica {
                let (client, base, body) = (client.clone(), base.clone(), thread(span));
                tasks.push(tokio::spawn(async move {
                    (span, replica, compress(&client, &base, &body).await)
                }));
            }
        }
    }
    let mut out: BTreeMap<&str, Vec<(usize, Bytes)>> = BTreeMap::new();
    for t in tasks {
        let (span, replica, (status, body)) = t.await.unwrap();
        assert_eq!(
            status,
            200,
            "{span} on replica {replica}: {}",
            String::from_utf8_lossy(&body)
        );
        out.entry(span).or_default().push((replica, body));
    }
    out
}

/// The part of an answer that the agent puts in its context: the compressed
/// thread (the summary message included), serialized.
fn thread_bytes(body: &Bytes) -> Vec<u8> {
    let v: Value = serde_json::from_slice(body).unwrap();
    assert_eq!(v["degraded"], false, "the LLM wrote the summary: {v}");
    assert_eq!(v["summary"]["strategy"], "llm", "{v}");
    serde_json::to_vec(&v["messages"]).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_replicas_share_one_postgres_and_nothing_else() {
    let test = "three_replicas_share_one_postgres_and_nothing_else";
    let Some(llm) = live::llm(test) else { return };
    let Some(db) = live::new_database(test).await else {
        return;
    };
    let database = db.url();
    let recorder = Recorder::start(&llm).await;
    let dirs: Vec<_> = (0..REPLICAS)
        .map(|_| tempfile::tempdir().unwrap())
        .collect();
    let replicas: Vec<process::Process> = dirs
        .iter()
        .map(|d| process::Process::start(&[], &env(&database, &recorder.url), d.path()))
        .collect();
    let bases: Vec<String> = replicas.iter().map(process::Process::url).collect();
    let ports: Vec<u16> = replicas.iter().map(|p| p.addr.port()).collect();
    assert_eq!(
        ports
            .iter()
            .collect::<std::collections::BTreeSet<_>>()
            .len(),
        REPLICAS,
        "three processes on three ports: {ports:?}"
    );

    // Round 1: every span on every replica at once.
    let first = round(&bases, PER_REPLICA).await;
    let after_first = calls(&recorder);
    // Round 2: the same requests again, one per span per replica.
    let second = round(&bases, 1).await;
    let after_second = calls(&recorder);

    let mut report = vec![format!(
        "three-replica run: {REPLICAS} condense processes (ports {ports:?}) sharing one PostgreSQL, \
         LLM {MODEL} behind a counting relay"
    )];
    for span in SPANS {
        let answers = &first[span];
        let reference = thread_bytes(&answers[0].1);
        for (replica, body) in answers.iter().chain(&second[span]) {
            assert_eq!(
                thread_bytes(body),
                reference,
                "{span}: replica {replica} answered other summary bytes"
            );
        }
        let bodies = &second[span];
        let replicas_answering: std::collections::BTreeSet<usize> =
            bodies.iter().map(|(r, _)| *r).collect();
        assert_eq!(replicas_answering.len(), REPLICAS);
        assert!(
            bodies.windows(2).all(|w| w[0].1 == w[1].1),
            "{span}: the cached answers differ between replicas"
        );
        let calls_first = after_first.get(span).copied().unwrap_or(0);
        let calls_second = after_second.get(span).copied().unwrap_or(0) - calls_first;
        report.push(format!(
            "  span {span}: round 1 {} concurrent requests over {REPLICAS} replicas -> {calls_first} upstream call(s), \
             identical summary bytes in all {}; round 2 {} requests -> {calls_second} more call(s), \
             {}-byte bodies byte-identical across replicas",
            answers.len(),
            answers.len() + bodies.len(),
            bodies.len(),
            bodies[0].1.len()
        ));
    }
    let total: usize = after_second.values().sum();
    report.push(format!(
        "  upstream calls in all: {total} for {} distinct spans ({after_second:?})",
        SPANS.len()
    ));
    // Straight to stderr: the harness captures eprintln! of passing tests.
    let _ = writeln!(std::io::stderr(), "{}", report.join("\n"));

    for span in SPANS {
        assert_eq!(
            after_first.get(span),
            Some(&1),
            "one upstream call for {span}: {after_first:?}"
        );
    }
    assert_eq!(
        after_second, after_first,
        "round 2 is served from the shared cache"
    );
    assert_eq!(
        total,
        SPANS.len(),
        "no other upstream call: {after_second:?}"
    );
}
