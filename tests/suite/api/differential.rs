//! The differential fuzz against OpenAI's Python tiktoken, at suite size:
//! seeded random texts (Unicode of many scripts, code, whitespace runs, long
//! repeats, bytes cut at arbitrary points and decoded lossily) drawn and
//! counted by `bench/fuzz_tiktoken.py --emit`, counted again by condense,
//! every count the same. The benchmark runs the same fuzz at a million
//! cases (`bench/README.md`).
//!
//! Python tiktoken is a live part: missing, the test fails and says how to
//! provide it, unless `CONDENSE_TEST_SKIP_LIVE=1` (then a visible SKIPPED).

use std::path::Path;
use std::process::Command;

use condense::tokens::{Encoders, Encoding};
use serde_json::{Value, json};

use crate::support::common::{app, post};
use crate::support::live;

/// Cases per run: a few seconds of a debug build.
const CASES: usize = 3000;
/// Fixed, so that a failure can be drawn again (`--seed`).
const SEED: u64 = 37;
/// The ones also sent through `/v1/tokens`, as a client sends them.
const OVER_HTTP: usize = 100;

/// The cases with tiktoken's counts, one JSON object a line.
fn cases(python: &Path) -> Vec<Value> {
    let mut command = Command::new(python);
    command
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/fuzz_tiktoken.py"))
        .args([
            "--emit",
            "--cases",
            &CASES.to_string(),
            "--seed",
            &SEED.to_string(),
        ]);
    let cache = live::target_dir().join("tiktoken-cache");
    if std::env::var_os("TIKTOKEN_CACHE_DIR").is_none() && cache.is_dir() {
        command.env("TIKTOKEN_CACHE_DIR", cache);
    }
    let out = command.output().expect("python runs");
    assert!(
        out.status.success(),
        "bench/fuzz_tiktoken.py --emit failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines = String::from_utf8(out.stdout).expect("UTF-8 lines");
    lines
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

#[tokio::test]
async fn random_texts_count_as_python_tiktoken_does() {
    let Some(python) = live::tiktoken("random_texts_count_as_python_tiktoken_does") else {
        return;
    };
    let cases = cases(&python);
    assert_eq!(cases.len(), CASES);
    let encoders = Encoders::global();
    let app = app();
    let mut failures = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        let text = case["text"].as_str().expect("a text");
        for (encoding, name) in [
            (Encoding::O200kBase, "o200k_base"),
            (Encoding::Cl100kBase, "cl100k_base"),
        ] {
            let want = case[name].as_u64().expect("a count") as usize;
            let got = if i < OVER_HTTP {
                let r = post(&app, "/v1/tokens", &json!({"text": text, "encoding": name})).await;
                assert_eq!(r.status, 200, "{}", r.text());
                r.json()["total_tokens"].as_u64().expect("a total") as usize
            } else {
                encoders.count(encoding, text)
            };
            if got != want {
                let shown: String = text.chars().take(200).collect();
                failures.push(format!(
                    "case {i} {name}: want {want}, got {got}: {shown:?}"
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} differences from tiktoken (seed {SEED}):\n{}",
        failures.len(),
        failures[..failures.len().min(20)].join("\n")
    );
}
