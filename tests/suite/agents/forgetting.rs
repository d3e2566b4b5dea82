//! A thinking session condense rewrote survives condense forgetting it: a
//! scripted Anthropic agent (thinking on, one tool loop) runs through the
//! proxy to the provider emulator (`emulator/`, which checks every thinking
//! block's binding as the API does) until condense has summarized it; then
//! condense forgets or is bypassed mid-session, and the agent carries on
//! with its whole history, whose thinking is bound to the prefixes condense
//! forwarded. Not one request may be refused (docs/compression.md,
//! "Preserved thinking"). Needs python3 only, not the agent CLIs.

use std::path::Path;

use serde_json::{Value, json};

use super::harness::Provider;
use super::server;
use crate::support::recorder::Recorder;

/// `default` summarizes every few turns in a window the session never
/// fills (so a summary in a tool loop could wait); `roomy`, switched to
/// mid-session, finds nothing due. `default` writes every due summary,
/// paying or not (`max_payback_turns`): these sessions test what a summary
/// does to a client's thread, the payback rule has its own tests.
const PROFILES: &str = "[profiles.default]\nmax_messages_before_summary = 6\nmin_recent_messages = 4\n\
    context_window = 200000\nmax_payback_turns = 1000000\n\n[profiles.roomy]\nmax_messages_before_summary = 400\n\
    min_recent_messages = 4\ncontext_window = 200000\n";
/// The emulator's script (`emulator/script.py`).
const STEPS: u32 = 16;
const FINAL: &str = "AGENT-FINAL-OK";
/// The agent says something after this step's tool result: not inside a
/// tool loop then, a due summary is written at once, even by a condense
/// that would let it wait in a loop (as one without a record once did).
const INTERJECT: u32 = 5;
/// Condense forgets or is bypassed from this step on.
const CHANGE: u32 = 9;

/// How condense is forgotten or bypassed from [`CHANGE`] on.
#[derive(Debug, Clone, Copy)]
enum Change {
    /// A new condense with an empty cache (a restart on an `emptyDir`, a
    /// replica with its own SQLite, an evicted row).
    Restart,
    /// `x-condense-profile` names another profile.
    Profile,
    /// `x-condense-shadow: true`.
    Shadow,
}

/// Condense proxying Anthropic to `provider`, the heuristic summarizer, its
/// SQLite cache in `dir`.
async fn condense(provider: &str, dir: &Path) -> String {
    let profiles = dir.join("profiles.toml");
    std::fs::write(&profiles, PROFILES).unwrap();
    server::serve(condense::Config {
        models: condense::config::ModelSettings {
            profiles_file: Some(profiles),
            ..Default::default()
        },
        // Its own file, named: an unset URL would take `DATABASE_URL`, a
        // database every test shares and a restart does not forget.
        cache: condense::config::CacheSettings {
            database_url: Some(format!(
                "sqlite://{}?mode=rwc",
                dir.join("cache.sqlite3").display()
            )),
            ..Default::default()
        },
        proxy: condense::config::ProxySettings {
            anthropic_url: Some(provider.to_string()),
            ..Default::default()
        },
        ..Default::default()
    })
    .await
}

/// One answered request: the provider's answer and condense's headers.
struct Answer {
    /// The body the agent sent, byte for byte.
    sent: Vec<u8>,
    status: u16,
    body: Value,
    compressed: bool,
    thinking: Option<String>,
}

/// The agent: its whole history, resent every turn, each answer appended
/// as the API returned it (thinking blocks and their signatures included).
struct Agent {
    http: reqwest::Client,
    history: Vec<Value>,
    thinking: bool,
}

impl Agent {
    fn new(thinking: bool) -> Self {
        Self {
            http: reqwest::Client::new(),
            history: vec![json!({"role": "user", "content": "Run the scripted build steps."})],
            thinking,
        }
    }

    async fn send(&self, base: &str, headers: &[(&str, &str)]) -> Answer {
        let mut body = json!({
            "model": "claude-test", "max_tokens": 2048,
            "system": "You are a careful build agent.",
            "tools": [{"name": "Bash", "description": "Runs a shell command.",
                       "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}}],
            "messages": self.history,
        });
        if self.thinking {
            body["thinking"] = json!({"type": "adaptive"});
        }
        let sent = serde_json::to_vec(&body).unwrap();
        let mut req = self
            .http
            .post(format!("{base}/v1/messages"))
            .header("x-api-key", "sk-ant-test")
            .header("anthropic-version", "2023-06-01")
            .header("content-type", "application/json")
            .body(sent.clone());
        for (name, value) in headers {
            req = req.header(*name, *value);
        }
        let res = req.send().await.expect("condense answers");
        let header = |n: &str| {
            res.headers()
                .get(n)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        let compressed = header("x-condense-compressed").as_deref() == Some("true");
        let thinking = header("x-condense-thinking");
        let status = res.status().as_u16();
        let body = res.json().await.expect("the answer is JSON");
        Answer {
            sent,
            status,
            body,
            compressed,
            thinking,
        }
    }

    /// Appends the answer and, after a tool call, its result (a few hundred
    /// lines ending in the step's marker, as `script.command` prints).
    /// Whether the agent is done.
    fn take(&mut self, answer: &Answer, step: u32) -> bool {
        let content = answer.body["content"].clone();
        self.history
            .push(json!({"role": "assistant", "content": content}));
        let Some(call) = content
            .as_array()
            .and_then(|c| c.iter().find(|b| b["type"] == "tool_use"))
        else {
            return true;
        };
        let lines: String = (1..=120)
            .map(|i| format!("step {step}: compiling module {i}\n"))
            .collect();
        let output = format!("{lines}AGENT-STEP-{step}-DONE\n");
        self.history.push(json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": call["id"], "content": output}
        ]}));
        if step == INTERJECT {
            self.history
                .push(json!({"role": "user", "content": "Keep going, and keep it short."}));
        }
        false
    }
}

/// Runs the session; every refusal and what the change exercised.
async fn session(change: Change) -> Vec<String> {
    let provider = Provider::start();
    let (first, second) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let before = condense(&provider.url, first.path()).await;
    let after = match change {
        Change::Restart => condense(&provider.url, second.path()).await,
        Change::Profile | Change::Shadow => before.clone(),
    };
    let mut agent = Agent::new(true);
    let mut failed = Vec::new();
    let (mut summarized_before, mut compressed_before) = (false, false);
    for step in 1..=STEPS + 1 {
        let changed = step >= CHANGE;
        let (base, headers): (&str, &[(&str, &str)]) = match change {
            _ if !changed => (&before, &[]),
            Change::Restart => (&after, &[]),
            Change::Profile => (&after, &[("x-condense-profile", "roomy")]),
            Change::Shadow => (&after, &[("x-condense-shadow", "true")]),
        };
        let answer = agent.send(base, headers).await;
        if answer.status != 200 {
            failed.push(format!(
                "{change:?}, step {step}: refused {}: {}",
                answer.status, answer.body
            ));
            break;
        }
        summarized_before |= !changed && answer.compressed;
        let dropped = answer.body["input_transformations"]
            .as_array()
            .map_or(0, Vec::len);
        // A turn that carries the summary the turn before carried: its
        // thinking saw this very prefix (the block the API dropped then stays
        // removed), so the model reads all of it.
        if compressed_before && answer.compressed && step != CHANGE && dropped > 0 {
            failed.push(format!(
                "{change:?}, step {step}: {dropped} thinking block(s) dropped on a turn that carries the last turn's summary"
            ));
        }
        compressed_before = answer.compressed;
        if step == CHANGE {
            // The history carried blocks bound to what condense forwarded
            // before: the API dropped them (or condense removed them).
            let opted = answer
                .thinking
                .as_deref()
                .is_some_and(|t| t.contains("drop_block"));
            if dropped == 0 || !opted {
                failed.push(format!(
                    "{change:?}, step {step}: stale thinking not exercised (dropped {dropped}, x-condense-thinking {:?})",
                    answer.thinking
                ));
            }
        }
        if agent.take(&answer, step) {
            let text = answer.body["content"].to_string();
            if !text.contains(FINAL) || step != STEPS + 1 {
                failed.push(format!("{change:?}, step {step}: ended with {text}"));
            }
            break;
        }
    }
    if !summarized_before {
        failed.push(format!(
            "{change:?}: condense summarized nothing before step {CHANGE}"
        ));
    }
    failed
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_without_the_cache_refuses_nothing() {
    let failed = session(Change::Restart).await;
    assert!(failed.is_empty(), "{failed:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_profile_mid_session_refuses_nothing() {
    let failed = session(Change::Profile).await;
    assert!(failed.is_empty(), "{failed:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shadow_mode_switched_on_mid_session_refuses_nothing() {
    let failed = session(Change::Shadow).await;
    assert!(failed.is_empty(), "{failed:#?}");
}

/// Shadow mode from the first turn: a body is forwarded byte for byte,
/// unless thinking is on and its history carries thinking; then only the
/// opt-out is spliced in (and its beta added, which the provider checks).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shadow_mode_adds_the_opt_out_and_nothing_else() {
    let provider = Provider::start();
    let recorder = Recorder::start(&provider.url).await;
    let dir = tempfile::tempdir().unwrap();
    let base = condense(&recorder.url, dir.path()).await;
    for thinking in [false, true] {
        let mut agent = Agent::new(thinking);
        for step in 1..=4 {
            let answer = agent.send(&base, &[("x-condense-shadow", "true")]).await;
            assert_eq!(answer.status, 200, "{}", answer.body);
            let forwarded = recorder.exchanges().pop().unwrap();
            let carries = agent.history.len() > 1 && thinking;
            if carries {
                let sent = String::from_utf8(answer.sent.clone()).unwrap();
                let opted = sent.replacen(
                    r#""thinking":{"type":"adaptive"}"#,
                    r#""thinking":{"block_binding":{"prefix_mismatch_behavior":"drop_block"},"type":"adaptive"}"#,
                    1,
                );
                assert!(
                    forwarded.request == opted.as_bytes(),
                    "thinking {thinking}, step {step}: more than the opt-out changed"
                );
            } else {
                assert!(
                    forwarded.request == answer.sent,
                    "thinking {thinking}, step {step}: not forwarded byte for byte"
                );
            }
            agent.take(&answer, step);
        }
    }
}
