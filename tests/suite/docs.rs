//! The examples of README.md and docs/*.md run as written, against a real
//! server, and the output each one shows is checked against the answer, so
//! a number that changes fails here instead of going stale on the page.
//! The convention is in docs/testing.md ("Examples that run"):
//!
//! - `<!-- example: NAME -->` goes right before a ```` ```sh ```` block;
//!   `<!-- example: NAME needs=llm -->` (the local LLM as summarizer) or
//!   `needs=provider` (the proxy pointed at a stub provider) says what the
//!   server needs beyond the defaults.
//! - A ```` ```json ```` or ```` ```text ```` block right after it (blank
//!   lines between, nothing else) is the output it shows (see [`json_shows`]
//!   and [`text_shows`] for what "shows" means).
//! - A ```` ```sh ```` block that sends a request to `localhost:8080` with
//!   no marker fails the test, so no example escapes it.
//!
//! Commands run with `sh -c` from the repository root (so `@data/…` files
//! are found), with `localhost:8080` replaced by the test server's address.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::{live, server};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// What an example needs of the server beyond the defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Needs {
    Nothing,
    Llm,
    Provider,
}

#[derive(Debug)]
struct Example {
    at: String,
    name: String,
    needs: Needs,
    command: String,
    /// The output block's language (`json` or `text`) and its text.
    shown: Option<(String, String)>,
}

/// The pages whose examples run: the README and every file of docs/.
fn pages() -> Vec<PathBuf> {
    let mut pages = vec![Path::new(ROOT).join("README.md")];
    let mut docs: Vec<_> = std::fs::read_dir(Path::new(ROOT).join("docs"))
        .expect("docs/ exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
}

/// A fenced block: its opening line's language, its text, and the index of
/// the line after its closing fence.
fn fence(lines: &[&str], at: usize) -> Option<(String, String, usize)> {
    let lang = lines.get(at)?.strip_prefix("```")?.trim().to_string();
    let end = at + 1 + lines[at + 1..].iter().position(|l| l.starts_with("```"))?;
    Some((lang, lines[at + 1..end].join("\n"), end + 1))
}

fn next_nonblank(lines: &[&str], mut at: usize) -> usize {
    while lines.get(at).is_some_and(|l| l.trim().is_empty()) {
        at += 1;
    }
    at
}

fn talks_to_the_server(command: &str) -> bool {
    command.contains("curl") && command.contains("localhost:8080/")
}

/// The examples of one page, and the problems of its markup.
fn examples(page: &Path) -> (Vec<Example>, Vec<String>) {
    let text = std::fs::read_to_string(page).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let file = page.strip_prefix(ROOT).unwrap().display().to_string();
    let (mut found, mut problems) = (Vec::new(), Vec::new());
    let mut i = 0;
    while i < lines.len() {
        let at = format!("{file}:{}", i + 1);
        if let Some(marker) = lines[i]
            .trim()
            .strip_prefix("<!-- example:")
            .and_then(|m| m.strip_suffix("-->"))
        {
            let mut words = marker.split_whitespace();
            let name = words.next().unwrap_or_default().to_string();
            let needs = match words.next() {
                None => Needs::Nothing,
                Some("needs=llm") => Needs::Llm,
                Some("needs=provider") => Needs::Provider,
                Some(other) => {
                    problems.push(format!("{at}: unknown `{other}` in the example marker"));
                    Needs::Nothing
                }
            };
            let Some((_, command, after)) = fence(&lines, i + 1).filter(|f| f.0 == "sh") else {
                problems.push(format!(
                    "{at}: example `{name}` is not followed by a ```sh block"
                ));
                i += 1;
                continue;
            };
            let out = next_nonblank(&lines, after);
            let shown = fence(&lines, out).filter(|(l, ..)| l == "json" || l == "text");
            i = shown.as_ref().map_or(after, |s| s.2);
            let shown = shown.map(|(l, t, _)| (l, t));
            found.push(Example {
                at,
                name,
                needs,
                command,
                shown,
            });
            continue;
        }
        if let Some((lang, body, after)) = fence(&lines, i) {
            if lang == "sh" && talks_to_the_server(&body) {
                problems.push(format!(
                    "{at}: a ```sh block sends requests to localhost:8080 without an \
                     `<!-- example: NAME -->` marker (docs/testing.md)"
                ));
            }
            i = after;
            continue;
        }
        i += 1;
    }
    (found, problems)
}

/// Whether `answer` shows what `shown` shows: an object shows the fields
/// it names (the answer may have more), an array every element in order
/// unless its last element is `"..."` (then a prefix), the string `"..."`
/// anything; numbers, strings and booleans must be equal.
fn json_shows(shown: &Value, answer: &Value) -> bool {
    match (shown, answer) {
        (Value::String(s), _) if s == "..." => true,
        (Value::Object(s), Value::Object(a)) => s
            .iter()
            .all(|(k, v)| a.get(k).is_some_and(|got| json_shows(v, got))),
        (Value::Array(s), Value::Array(a)) => {
            let open = s.last().is_some_and(|v| v == "...");
            let s = if open { &s[..s.len() - 1] } else { &s[..] };
            (a.len() == s.len() || open && a.len() >= s.len())
                && s.iter().zip(a).all(|(v, got)| json_shows(v, got))
        }
        _ => shown == answer,
    }
}

/// Whether `answer` shows the lines of `shown`: each line (trailing spaces
/// aside) appears in the answer, in order; a line `...` stands for lines
/// left out.
fn text_shows(shown: &str, answer: &str) -> bool {
    let mut lines = answer.lines().map(str::trim_end);
    shown
        .lines()
        .map(str::trim_end)
        .filter(|l| *l != "...")
        .all(|want| lines.any(|got| got == want))
}

/// Runs `command` from the repository root against the server at `addr`;
/// its standard output, or why it failed.
async fn run(command: &str, addr: &str) -> Result<String, String> {
    let command = command.replace("localhost:8080", addr);
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new("sh")
            .arg("-c")
            .arg(&command)
            .current_dir(ROOT)
            .output()
    })
    .await
    .unwrap()
    .map_err(|e| format!("sh did not start: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        return Err(format!("exit {}: {stderr}{stdout}", out.status));
    }
    if stdout.trim().is_empty() {
        return Err("no output".into());
    }
    Ok(stdout)
}

fn check(example: &Example, output: &str) -> Result<(), String> {
    let Some((lang, shown)) = &example.shown else {
        return Ok(());
    };
    let ok = if lang == "json" {
        let shown: Value = serde_json::from_str(shown)
            .map_err(|e| format!("its output block is not JSON: {e}"))?;
        let answer: Value =
            serde_json::from_str(output).map_err(|e| format!("the answer is not JSON: {e}"))?;
        json_shows(&shown, &answer)
    } else {
        text_shows(shown, output)
    };
    if ok {
        Ok(())
    } else {
        Err("the page shows an output the server no longer gives".into())
    }
}

/// A provider that answers every request at once with a fixed message, as
/// Anthropic's and OpenAI's APIs would (shape only).
async fn stub_provider() -> String {
    use axum::routing::post;
    let answer = || async {
        axum::Json(serde_json::json!({
            "id": "msg_stub", "type": "message", "role": "assistant",
            "content": [{"type": "text", "text": "Done."}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 1, "output_tokens": 1}
        }))
    };
    let app = axum::Router::new()
        .route("/v1/messages", post(answer))
        .route("/v1/chat/completions", post(answer));
    server::serve_router(app).await
}

/// A server for `needs`, with its summary cache in `dir`; `None` when the
/// run opted out of the local LLM.
async fn start(needs: Needs, dir: &Path) -> Option<String> {
    let mut config = condense::Config::default();
    config.cache.path = dir.join(format!("{needs:?}.sqlite3"));
    match needs {
        Needs::Nothing => {}
        Needs::Llm => {
            config.upstream.url = Some(live::llm("docs::examples (needs=llm)")?);
            config.upstream.model = "SmolLM2-135M-Instruct".into();
            config.upstream.context_window = 8192;
            config.upstream.timeout = std::time::Duration::from_secs(1800);
            config.upstream.retry_budget = std::time::Duration::from_secs(3600);
            config.limits.request_timeout = std::time::Duration::from_secs(3600);
        }
        Needs::Provider => {
            let provider = stub_provider().await;
            config.proxy.anthropic_url = Some(provider.clone());
            config.proxy.openai_url = Some(format!("{provider}/v1"));
        }
    }
    let url = server::serve(config).await;
    Some(url.trim_start_matches("http://").to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_example_runs_as_written_and_shows_its_answer() {
    let (mut all, mut problems) = (Vec::new(), Vec::new());
    for page in pages() {
        let (found, wrong) = examples(&page);
        all.extend(found);
        problems.extend(wrong);
    }
    assert!(all.len() >= 10, "the examples were found: {all:#?}");
    let dir = tempfile::tempdir().unwrap();
    let mut servers = HashMap::new();
    for example in &all {
        let addr = match servers.entry(example.needs) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => e.insert(start(example.needs, dir.path()).await),
        };
        let Some(addr) = addr.as_deref() else {
            continue;
        };
        let result = match run(&example.command, addr).await {
            Ok(output) => {
                check(example, &output).map_err(|e| format!("{e}; it answered:\n{output}"))
            }
            Err(e) => Err(e),
        };
        if let Err(e) = result {
            problems.push(format!("{} (example `{}`): {e}", example.at, example.name));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}

#[test]
fn a_changed_number_fails() {
    let answer = serde_json::json!({"compressed": true, "tokens_after": 4401, "messages": [1, 2]});
    let shows = |s: &str| json_shows(&serde_json::from_str(s).unwrap(), &answer);
    assert!(shows(r#"{"compressed": true, "tokens_after": 4401}"#));
    assert!(shows(r#"{"messages": [1, "..."]}"#));
    assert!(shows(r#"{"messages": "..."}"#));
    assert!(!shows(r#"{"tokens_after": 4369}"#));
    assert!(!shows(r#"{"messages": [1]}"#));
    assert!(!shows(r#"{"tokens_before": 4401}"#));
    let text = "a\n tokens  32,168 / 128,000 (25.1%)\nb\n";
    assert!(text_shows(
        " tokens  32,168 / 128,000 (25.1%)\n...\nb",
        text
    ));
    assert!(!text_shows(" tokens  31,940 / 128,000 (25.0%)", text));
    assert!(!text_shows("b\na", text));
}
