//! The parts of an agent session: the scripted provider with its recording
//! relay (`provider.py`, one Python process), condense in front of it, and
//! the real CLIs run non-interactively, each with a throwaway home.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// Only a guard against a hung CLI: a healthy session takes seconds.
const HANG_GUARD: Duration = Duration::from_secs(20 * 60);

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/agents")
}

/// `provider.py`, killed when dropped (its stdin closes with the test too).
pub struct Provider {
    child: Child,
    /// The scripted provider's base URL.
    pub url: String,
    /// The relay's base URL: what the CLIs are pointed at.
    pub relay: String,
    http: reqwest::Client,
}

impl Provider {
    pub fn start() -> Provider {
        Self::start_with(&[])
    }

    /// With extra environment (`PROVIDER_MID_CONVERSATION_SYSTEM=beta`).
    pub fn start_with(env: &[(&str, &str)]) -> Provider {
        let mut child = Command::new("python3")
            .arg(dir().join("provider.py"))
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("python3 runs tests/agents/provider.py");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .expect("provider.py prints its ports");
        let ports: Value = serde_json::from_str(&line)
            .unwrap_or_else(|_| panic!("provider.py printed {line:?}, not its ports"));
        Provider {
            child,
            url: format!("http://127.0.0.1:{}", ports["provider"]),
            relay: format!("http://127.0.0.1:{}", ports["relay"]),
            http: reqwest::Client::new(),
        }
    }

    /// Labels what follows `name` and points the relay at `target`.
    pub async fn session(&self, name: &str, target: &str) {
        self.http
            .post(format!("{}/_session", self.url))
            .json(&json!({"session": name, "target": target}))
            .send()
            .await
            .and_then(|r| r.error_for_status())
            .expect("provider.py takes a session");
    }

    /// Everything the relay and the provider saw in session `name`.
    pub async fn log(&self, name: &str) -> Vec<Value> {
        let url = format!("{}/_log?session={name}", self.url);
        let got = self
            .http
            .get(url)
            .send()
            .await
            .expect("provider.py answers");
        got.json().await.expect("the log is JSON")
    }
}

impl Drop for Provider {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Who writes condense's summaries in a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Summarizer {
    /// The profile's default (`auto`: the heuristic, no upstream LLM being
    /// configured): a text summary, after which condense removes the kept
    /// turns' reasoning the provider would drop (OpenAI's prefix rule).
    Own,
    /// `strategy = "provider"`: the conversation's provider compacts the
    /// span (its `/responses/compact`, with the client's credentials and
    /// model, through the proxy's own client), and the kept turns keep
    /// their reasoning. No upstream is configured: none is needed
    /// (docs/compression.md, "The provider's compaction item").
    Provider,
}

impl Summarizer {
    pub fn name(self) -> &'static str {
        match self {
            Summarizer::Own => "default",
            Summarizer::Provider => "provider",
        }
    }
}

/// Condense proxying both APIs to `provider`, the `summarizer`, the
/// embedded (SQLite) summary cache in `dir`, and a `default` profile
/// that summarizes every few turns of a session (a turn adds 2 messages
/// with Claude Code, 3 items with Codex: reasoning, call, output), the
/// turns between reusing the last summary. Claude Code's turns are all one
/// active tool loop with thinking, where a summary after the first waits
/// until the thread no longer fits (docs/compression.md, "Preserved
/// thinking"): a 40k window makes that happen several times in a session.
/// Every due summary is written, paying or not (`max_payback_turns`): the
/// sessions test what summaries do to a real client's thread; the payback
/// rule has its own tests (`api::verdict`, `bench/cost_replay.py`).
/// `every` is the profile's `max_messages_before_summary` ([`EVERY`]).
pub async fn condense(provider: &str, dir: &Path, summarizer: Summarizer, every: usize) -> String {
    let profiles = dir.join("profiles.toml");
    let strategy = match summarizer {
        Summarizer::Own => "",
        Summarizer::Provider => "strategy = \"provider\"\n",
    };
    std::fs::write(
        &profiles,
        format!(
            "[profiles.default]\n{strategy}max_messages_before_summary = {every}\nmin_recent_messages = 4\ncontext_window = 40000\nmax_payback_turns = 1000000\n"
        ),
    )
    .unwrap();
    super::server::serve(condense::Config {
        models: condense::config::ModelSettings {
            profiles_file: Some(profiles),
            ..Default::default()
        },
        cache: condense::config::CacheSettings {
            path: dir.join("cache.sqlite3"),
            ..Default::default()
        },
        proxy: condense::config::ProxySettings {
            anthropic_url: Some(provider.to_string()),
            openai_url: Some(format!("{provider}/v1")),
            ..Default::default()
        },
        ..Default::default()
    })
    .await
}

/// The sessions' `max_messages_before_summary`.
pub const EVERY: usize = 12;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cli {
    ClaudeCode,
    Codex,
}

/// One finished CLI session.
pub struct Run {
    pub status: ExitStatus,
    /// The agent's final message.
    pub answer: String,
    pub output: String,
    /// Where its tools ran.
    pub workdir: tempfile::TempDir,
}

pub const PROMPT: &str = "Run the scripted build steps, then report.";

impl Cli {
    pub fn name(self) -> &'static str {
        match self {
            Cli::ClaudeCode => "claude-code",
            Cli::Codex => "codex",
        }
    }

    /// Runs one session against `base` (the relay), non-interactively,
    /// with only the environment it needs; Codex compacts its thread on its
    /// own past `own_compaction` tokens (`model_auto_compact_token_limit`).
    pub fn run(self, base: &str, own_compaction: Option<u64>) -> Run {
        let home = tempfile::tempdir().unwrap();
        let workdir = tempfile::tempdir().unwrap();
        let bin = dir().join("node_modules");
        let program = match self {
            Cli::ClaudeCode => bin.join("@anthropic-ai/claude-code/bin/claude.exe"),
            Cli::Codex => bin.join(".bin/codex"),
        };
        let mut cmd = Command::new(program);
        cmd.env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", home.path())
            .current_dir(workdir.path());
        let answer_file = home.path().join("answer.txt");
        match self {
            Cli::ClaudeCode => {
                assert!(own_compaction.is_none(), "only Codex is set to compact");
                cmd.args(["-p", PROMPT, "--output-format", "json"])
                    .args(["--dangerously-skip-permissions", "--no-session-persistence"])
                    .env("IS_SANDBOX", "1")
                    .env("ANTHROPIC_BASE_URL", base)
                    .env("ANTHROPIC_API_KEY", "sk-ant-test")
                    .env("CLAUDE_CODE_MAX_RETRIES", "0");
                for quiet in [
                    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
                    "DISABLE_AUTOUPDATER",
                    "DISABLE_TELEMETRY",
                    "DISABLE_ERROR_REPORTING",
                ] {
                    cmd.env(quiet, "1");
                }
            }
            Cli::Codex => {
                let config = codex_config(base, own_compaction);
                std::fs::write(home.path().join("config.toml"), config).unwrap();
                cmd.args(["exec", "--skip-git-repo-check"])
                    .args(["--dangerously-bypass-approvals-and-sandbox", "--ephemeral"])
                    .args(["--color", "never", "-C"])
                    .arg(workdir.path())
                    .arg("-o")
                    .arg(&answer_file)
                    .arg(PROMPT)
                    .env("CODEX_HOME", home.path())
                    .env("CONDENSE_TEST_KEY", "sk-test");
            }
        }
        let (stdout, stderr) = (home.path().join("stdout"), home.path().join("stderr"));
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&stdout).unwrap())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .unwrap_or_else(|e| panic!("{} starts: {e}", self.name()));
        let status = wait(&mut child, self.name());
        let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
        let output = format!("stdout:\n{}\nstderr:\n{}", read(&stdout), read(&stderr));
        let answer = match self {
            // `--output-format json`: one object whose `result` is the answer.
            Cli::ClaudeCode => serde_json::from_str::<Value>(&read(&stdout))
                .ok()
                .and_then(|v| v["result"].as_str().map(str::to_string))
                .unwrap_or_default(),
            Cli::Codex => read(&answer_file),
        };
        Run {
            status,
            answer,
            output,
            workdir,
        }
    }
}

/// Waits for `child`; kills it after [`HANG_GUARD`].
fn wait(child: &mut Child, name: &str) -> ExitStatus {
    let deadline = Instant::now() + HANG_GUARD;
    loop {
        if let Some(status) = child.try_wait().expect("waiting on the CLI") {
            return status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            panic!("{name} still ran after {HANG_GUARD:?}: killed");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn codex_config(base: &str, own_compaction: Option<u64>) -> String {
    let compact = own_compaction
        .map(|n| format!("model_auto_compact_token_limit = {n}\n"))
        .unwrap_or_default();
    format!(
        "check_for_update_on_startup = false\n{compact}model_provider = \"local\"\nmodel = \"gpt-5.5\"\n\n\
         [model_providers.local]\nname = \"local\"\nbase_url = \"{base}/v1\"\nwire_api = \"responses\"\n\
         env_key = \"CONDENSE_TEST_KEY\"\nrequest_max_retries = 0\nstream_max_retries = 0\n"
    )
}
