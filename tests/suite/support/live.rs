//! The real parts some tests need: a PostgreSQL server and the local LLM.
//!
//! A test that needs one and does not find it fails, saying how to provide it,
//! so a green `cargo test` never means "nothing ran". The one way around that
//! is the explicit opt-out `CONDENSE_TEST_SKIP_LIVE=1`; a skipped test then
//! writes `SKIPPED …` straight to the process's stderr, which the test
//! harness does not capture, so the skip shows in the output of a passing run.
//! The opt-out skips the tests of the tools (the browser, schemathesis, the
//! agent CLIs) even where they are installed, so that `scripts/test.sh fast`
//! runs none of them on a machine that ran the full tier; PostgreSQL and the
//! local LLM are named by an environment variable, and a test whose variable
//! is set still runs.

use std::io::Write;

use sqlx::postgres::PgConnectOptions;

/// Opt-out variable: set to `1` to skip the tests that need live parts.
pub const SKIP_LIVE: &str = "CONDENSE_TEST_SKIP_LIVE";

fn skipping(test: &str, what: &str) -> bool {
    let opted_out =
        std::env::var(SKIP_LIVE).is_ok_and(|v| v == "1" || v.eq_ignore_ascii_case("true"));
    if opted_out {
        // Not eprintln!: the harness captures that for passing tests.
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED {test}: needs {what} ({SKIP_LIVE}=1 is set)"
        );
    }
    opted_out
}

/// `DATABASE_URL` of a PostgreSQL server, or `None` when the run opted out.
/// Panics with instructions when it is missing.
pub fn postgres(test: &str) -> Option<String> {
    match std::env::var("DATABASE_URL") {
        Ok(url) if !url.trim().is_empty() => Some(url),
        _ if skipping(test, "PostgreSQL") => None,
        _ => panic!(
            "{test} needs PostgreSQL: set DATABASE_URL=postgres://… to a server it may create \
             databases on, or run `./scripts/test.sh` (or `scripts/with-postgres.sh cargo test`), \
             which starts a throwaway one; {SKIP_LIVE}=1 skips such tests"
        ),
    }
}

/// The CA certificate (PEM file) of the `DATABASE_URL` server's TLS
/// certificate, from `CONDENSE_TEST_PG_TLS_ROOT`, or `None` when the run
/// opted out. Panics with instructions when it is missing.
pub fn postgres_tls_root(test: &str) -> Option<String> {
    match std::env::var("CONDENSE_TEST_PG_TLS_ROOT") {
        Ok(path) if std::path::Path::new(&path).is_file() => Some(path),
        _ if skipping(test, "PostgreSQL with TLS") => None,
        found => panic!(
            "{test} needs PostgreSQL with TLS: CONDENSE_TEST_PG_TLS_ROOT must name the PEM file \
             of the CA that signed the DATABASE_URL server's certificate (it is {found:?}); \
             `./scripts/test.sh` (or `scripts/with-postgres.sh cargo test`) starts a throwaway \
             server with ssl=on and sets both, which needs `openssl` (apt-get install openssl); \
             {SKIP_LIVE}=1 skips such tests"
        ),
    }
}

/// The build's target directory, where `scripts/setup.sh` puts the Python
/// tools (`venv/`) and tiktoken's rank files (`tiktoken-cache/`).
pub fn target_dir() -> std::path::PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(
        || std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target"),
        std::path::PathBuf::from,
    )
}

/// The Python that has tiktoken (`target/venv`, which `scripts/setup.sh`
/// fills and the golden file's script uses), or `None` when the run opted
/// out. Panics with instructions when it is missing.
pub fn tiktoken(test: &str) -> Option<std::path::PathBuf> {
    let python = target_dir().join("venv/bin/python");
    if skipping(test, "Python tiktoken") {
        return None;
    }
    let found = std::process::Command::new(&python)
        .args(["-c", "import tiktoken"])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        found,
        "{test} needs Python tiktoken in {}: `python3 -m venv target/venv && \
         target/venv/bin/python -m pip install -r tests/fixtures/golden/requirements.txt` \
         (or `./scripts/test.sh`, which does it); {SKIP_LIVE}=1 skips such tests",
        python.display()
    );
    Some(python)
}

/// Base URL of the local OpenAI-compatible LLM (`…/v1`), or `None` when the
/// run opted out. Panics with instructions when it is missing.
pub fn llm(test: &str) -> Option<String> {
    match std::env::var("CONDENSE_TEST_LLM_URL") {
        Ok(url) if !url.trim().is_empty() => Some(url),
        _ if skipping(test, "the local LLM") => None,
        _ => panic!(
            "{test} needs the local LLM: run `scripts/local-llm.sh start` and set \
             CONDENSE_TEST_LLM_URL to the URL it prints (http://127.0.0.1:8089/v1), or run \
             `./scripts/test.sh`, which does both; {SKIP_LIVE}=1 skips such tests"
        ),
    }
}

/// The local LLM's origin (`http://127.0.0.1:8089`) from its `…/v1` URL:
/// where its Anthropic routes (`/v1/messages`, `…/count_tokens`) hang.
pub fn origin(llm: &str) -> String {
    llm.trim_end_matches('/')
        .trim_end_matches("/v1")
        .to_string()
}

/// A new, empty database on the `DATABASE_URL` server, one per test so that
/// tests never see each other's rows, or `None` when the run opted out.
pub async fn new_database(test: &str) -> Option<TestDatabase> {
    use sqlx::{ConnectOptions, Executor};
    let url = postgres(test)?;
    let admin: PgConnectOptions = url.parse().expect("DATABASE_URL is a PostgreSQL URL");
    let name = format!("condense_test_{}", uuid::Uuid::new_v4().simple());
    let mut conn = admin
        .connect()
        .await
        .expect("DATABASE_URL accepts connections");
    conn.execute(format!("CREATE DATABASE {name}").as_str())
        .await
        .expect("the test server lets us create databases");
    Some(TestDatabase { admin, name })
}

/// A database of [`new_database`], dropped with this guard, so that a run
/// leaves none behind on a server that outlives it (a developer's own, CI's
/// database service). The test keeps it until its end: `let Some(db) = …`,
/// never `let _ = …`, which would drop it at once.
pub struct TestDatabase {
    admin: PgConnectOptions,
    name: String,
}

impl TestDatabase {
    /// Options for the server's maintenance database, the one `DATABASE_URL` names.
    pub fn admin(&self) -> &PgConnectOptions {
        &self.admin
    }

    /// Its name, for the server's catalogs (`pg_stat_activity.datname`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Options for this database.
    pub fn options(&self) -> PgConnectOptions {
        self.admin.clone().database(&self.name)
    }

    /// The URL of this database.
    pub fn url(&self) -> String {
        use sqlx::ConnectOptions;
        self.options().to_url_lossy().to_string()
    }
}

impl Drop for TestDatabase {
    /// `WITH (FORCE)` (PostgreSQL 13+) ends the connections still open on it:
    /// the pools of the apps the test built may outlive it by a moment.
    fn drop(&mut self) {
        use sqlx::{ConnectOptions, Executor};
        let (admin, name) = (self.admin.clone(), self.name.clone());
        // Drop cannot await, and may run on the test's runtime: a thread with
        // a runtime of its own does the I/O, and the test waits for it.
        let dropped = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a current-thread runtime");
            rt.block_on(async {
                let mut conn = admin.connect().await?;
                conn.execute(format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)").as_str())
                    .await?;
                Ok::<_, sqlx::Error>(())
            })
        })
        .join();
        // Said, not panicked: a panic in a Drop that runs while a failed test
        // unwinds would abort the whole run.
        if let Ok(Err(e)) = dropped {
            let _ = writeln!(
                std::io::stderr(),
                "could not drop test database {}: {e}",
                self.name
            );
        }
    }
}

/// Headless Chromium, its driver and selenium (Debian's `chromium` and
/// `chromium-driver`, `tests/browser/requirements.txt`), or `None` when the
/// run opted out. Panics with instructions when one is missing.
pub fn browser(test: &str) -> Option<()> {
    if skipping(test, "a headless browser") {
        return None;
    }
    let chromium = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    let driver = std::env::var("CHROMEDRIVER").unwrap_or_else(|_| "/usr/bin/chromedriver".into());
    let selenium = std::process::Command::new("python3")
        .args(["-c", "import selenium"])
        .status()
        .is_ok_and(|s| s.success());
    let missing: Vec<&str> = [
        (!std::path::Path::new(&chromium).exists()).then_some("chromium"),
        (!std::path::Path::new(&driver).exists()).then_some("chromedriver"),
        (!selenium).then_some("selenium"),
    ]
    .into_iter()
    .flatten()
    .collect();
    if missing.is_empty() {
        return Some(());
    }
    panic!(
        "{test} needs a headless browser, and {missing:?} is missing: `apt-get install chromium \
         chromium-driver` (or set CHROMIUM and CHROMEDRIVER) and `python3 -m pip install -r \
         tests/browser/requirements.txt`; `.ci/run` and `./scripts/test.sh` do this; \
         {SKIP_LIVE}=1 skips such tests"
    );
}

/// schemathesis, the API fuzzer (`tests/schemathesis/requirements.txt`),
/// or `None` when the run opted out. Panics with instructions when it is
/// missing.
pub fn schemathesis(test: &str) -> Option<()> {
    if skipping(test, "schemathesis") {
        return None;
    }
    let installed = std::process::Command::new("python3")
        .args(["-c", "import schemathesis.cli"])
        .status()
        .is_ok_and(|s| s.success());
    if installed {
        return Some(());
    }
    panic!(
        "{test} needs schemathesis: `python3 -m pip install -r tests/schemathesis/requirements.txt` \
         (`./scripts/test.sh` does this); {SKIP_LIVE}=1 skips such tests"
    );
}

/// The pinned agent CLIs (`tests/agents/package.json`, installed with
/// `npm ci --prefix tests/agents`) and python3 for the scripted provider,
/// or `None` when the run opted out. Panics with instructions when one is
/// missing.
pub fn agent_clis(test: &str) -> Option<()> {
    if skipping(test, "the agent CLIs") {
        return None;
    }
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/agents/node_modules");
    let python = std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    let missing: Vec<&str> = [
        (!dir
            .join("@anthropic-ai/claude-code/bin/claude.exe")
            .is_file())
        .then_some("Claude Code"),
        (!dir.join(".bin/codex").exists()).then_some("Codex CLI"),
        (!python).then_some("python3"),
    ]
    .into_iter()
    .flatten()
    .collect();
    if missing.is_empty() {
        return Some(());
    }
    panic!(
        "{test} needs the pinned agent CLIs and python3, and {missing:?} is missing: \
         `npm ci --prefix tests/agents` (Node.js and npm: `apt-get install nodejs npm`) and \
         python3; `.ci/run` and `./scripts/test.sh` do this; {SKIP_LIVE}=1 skips such tests"
    );
}

/// Whether a test may go on after trying to make files immutable (`made`:
/// `chattr +i`, which needs root and a file system with the flag): `None`
/// when it could not and the run opted out; panics with instructions when
/// it could not otherwise.
pub fn immutable(test: &str, made: bool) -> Option<()> {
    if made {
        return Some(());
    }
    if skipping(test, "`chattr +i`") {
        return None;
    }
    panic!(
        "{test} needs `chattr +i`: run the tests as root on a file system with the immutable \
         flag (ext4, xfs, btrfs; CI's machine is one); {SKIP_LIVE}=1 skips such tests"
    );
}
