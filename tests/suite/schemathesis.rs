//! API fuzzing: schemathesis generates requests from `openapi.yaml` (valid
//! ones and invalid ones, edge cases of every schema, sequences of calls),
//! sends them to condense served on a real socket, and checks every answer
//! with all its checks: no 5xx, status codes, content types, headers and
//! bodies as the spec declares them, invalid data refused, valid data
//! accepted. Its examples phase sends the document's own examples first
//! (among them a thread of each wire format with every kind of message).
//!
//! The proxy routes forward to a stub provider (any answer is relayed, so
//! what is checked is condense's own part: reading the request, relaying,
//! its headers); the summarizer is a stub upstream, so `llm` and `hybrid`
//! summaries are written. The run is bounded (examples per operation, one
//! worker) and repeatable (a fixed seed, no example database).
use crate::support::{live, server, stub};

use std::path::Path;
use std::process::Command;

/// Examples generated per operation in the fuzzing phase (the coverage
/// phase adds its own edge cases, some 3,000 in all): a few minutes on two cores.
const EXAMPLES: &str = "50";
const SEED: &str = "20261124";

/// The seed: [`SEED`], or `CONDENSE_TEST_SCHEMATHESIS_SEED` to explore others.
fn seed() -> String {
    std::env::var("CONDENSE_TEST_SCHEMATHESIS_SEED").unwrap_or_else(|_| SEED.to_string())
}

/// A provider behind every proxy route (the counting ones too) that
/// answers every request 200.
async fn provider() -> String {
    let answer = || async {
        axum::Json(serde_json::json!({
            "id": "stub", "type": "message", "role": "assistant",
            "content": [{"type": "text", "text": "ok"}],
            "choices": [{"message": {"role": "assistant", "content": "ok"}}],
            "input_tokens": 1
        }))
    };
    let app = axum::Router::new()
        .route("/v1/chat/completions", axum::routing::post(answer))
        .route("/v1/responses", axum::routing::post(answer))
        .route("/v1/messages", axum::routing::post(answer))
        .route("/v1/messages/count_tokens", axum::routing::post(answer))
        .route("/v1/responses/input_tokens", axum::routing::post(answer))
        .route("/v1/responses/compact", axum::routing::post(answer));
    server::serve_router(app).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schemathesis_finds_no_server_error_and_no_answer_outside_the_spec() {
    let test = "schemathesis_finds_no_server_error_and_no_answer_outside_the_spec";
    if live::schemathesis(test).is_none() {
        return;
    }
    let provider = provider().await;
    let cache = tempdir();
    let upstream = stub::start(stub::Fault::Ok, false).await;
    let url = server::serve(condense::Config {
        upstream: condense::config::UpstreamSettings {
            url: Some(upstream.url.clone()),
            model: "stub-model".into(),
            ..Default::default()
        },
        // A cache, so the ledger's route answers as in production (off,
        // it is a 501).
        cache: condense::config::CacheSettings {
            database_url: Some(format!("sqlite://{}", cache.join("cache.db").display())),
            ..Default::default()
        },
        proxy: condense::config::ProxySettings {
            openai_url: Some(format!("{provider}/v1")),
            anthropic_url: Some(provider),
            ..Default::default()
        },
        ..Default::default()
    })
    .await;
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let report = tempdir();
    let mut st = Command::new("python3");
    st.args(["-m", "schemathesis.cli", "--no-color", "--config-file"])
        .arg(root.join("tests/schemathesis/schemathesis.toml"))
        .arg("run")
        .arg(root.join("openapi.yaml"))
        .args(["--url", &url, "--checks", "all"])
        .args(["--max-examples", EXAMPLES, "--seed", &seed()])
        .args(["--generation-database", "none", "--workers", "1"])
        // A debug build on a busy machine: a slow answer is not a failure.
        .args(["--request-timeout", "120"])
        .arg("--report-dir")
        .arg(&report)
        .current_dir(&report);
    // The server runs on this runtime: wait for the fuzzer off it.
    let out = tokio::task::spawn_blocking(move || st.output())
        .await
        .unwrap()
        .expect("python3 runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    // Reproduction commands repeat whole generated bodies: left out.
    let shown: Vec<String> = stdout
        .lines()
        .filter(|l| !l.trim_start().starts_with("curl "))
        .map(|l| l.chars().take(600).collect())
        .collect();
    let _ = std::fs::remove_dir_all(&report);
    // schemathesis 4.32.5 sometimes fails to generate a negative example
    // for the thread schema (its `contains` demands meet an `items` they
    // contradict): a fault of the generator, which a given seed either
    // meets or not.
    let generator = if stdout.contains("Cannot generate an array with") {
        "\n(`Cannot generate an array with N demanded elements` is schemathesis' generator \
         failing on the thread schema's format detection, not a finding about condense: \
         try another SEED)"
    } else {
        ""
    };
    assert!(
        out.status.success(),
        "schemathesis found problems (exit {:?}):\n{}\n{}{generator}",
        out.status.code(),
        shown.join("\n"),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("generated"),
        "schemathesis ran no test: {stdout}"
    );
}

/// A fresh directory for schemathesis' files (it writes into its working directory).
fn tempdir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("condense-schemathesis-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
