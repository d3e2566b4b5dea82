//! A SQLite cache file that breaks does not break the process: the binary
//! runs as its own process (a SIGBUS would take this test binary down with
//! it), and its cache files are emptied, overwritten or made immutable while
//! it serves.
//! Every answer is still a 200, the cache's failures are counted, and the
//! process goes on serving. A second process on the same file is refused at
//! start-up, in one line: the file is locked to the first (`src/cache/sqlite.rs`).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::process::{self, Process};
use crate::support::{live, prometheus};

/// The warning an answer carries when its summary could not be cached.
const CACHE_DOWN: &str = "the summary cache is unavailable";

fn env(db: &Path) -> Vec<(String, String)> {
    [
        ("CONDENSE_LISTEN", "127.0.0.1:0".to_string()),
        (
            "CONDENSE_DATABASE_URL",
            format!("sqlite://{}?mode=rwc", db.display()),
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// A thread of its own per `n` (so a new summary, a cache write), summarized
/// by the heuristic: no LLM needed.
fn body(n: usize) -> Value {
    let mut messages = vec![json!({"role": "system", "content": "be careful"})];
    for i in 0..8 {
        let id = format!("call_{n}_{i}");
        messages.push(json!({"role": "user", "content": format!("thread {n}: check src/m{i}.rs")}));
        messages.push(json!({"role": "assistant", "content": null, "tool_calls": [{"id": id, "type": "function", "function": {"name": "read_file", "arguments": format!("{{\"path\": \"src/m{i}.rs\"}}")}}]}));
        messages.push(
            json!({"role": "tool", "tool_call_id": id, "content": format!("fn m{i}() {{ {n} }}")}),
        );
    }
    json!({"messages": messages, "force": true, "summarizer": {"strategy": "heuristic"}})
}

/// The file beside the database that SQLite names with `suffix` (`-wal`, `-shm`).
fn beside(db: &Path, suffix: &str) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// One `/v1/compress` call: its status and JSON body, or why none came.
async fn post(base: String, n: usize) -> Result<(u16, Value), reqwest::Error> {
    let r = reqwest::Client::new()
        .post(format!("{base}/v1/compress"))
        .json(&body(n))
        .send()
        .await?;
    Ok((r.status().as_u16(), r.json().await?))
}

/// [`post`] to `server`. A process that died (SIGBUS) answers nothing: the
/// panic shows what it wrote.
async fn compress(server: &Process, n: usize) -> (u16, Value) {
    post(server.url(), n).await.unwrap_or_else(|e| {
        panic!(
            "condense did not answer request {n} ({e}); its output:\n{}",
            server.output()
        )
    })
}

/// `condense_cache_errors_total` for the SQLite backend, every operation.
async fn cache_errors(server: &Process) -> f64 {
    prometheus::scrape(&reqwest::Client::new(), &server.url())
        .await
        .matching("condense_cache_errors_total", &[("backend", "sqlite")])
        .map(|s| s.value)
        .sum()
}

#[tokio::test]
async fn a_damaged_cache_file_fails_cache_calls_not_the_process() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("cache.sqlite3");
    let server = Process::start(&[], &env(&db), dir.path());

    // The cache works: a summary written, then served from it.
    let (status, first) = compress(&server, 0).await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["summary"]["cached"], false);
    let (status, again) = compress(&server, 0).await;
    assert_eq!(status, 200, "{again}");
    assert_eq!(again["summary"]["cached"], true, "a hit");

    // The emptied WAL index (the finding): SQLite's default VFS maps
    // the `-shm` file, and the next write touched a page past its end (SIGBUS).
    let shm = beside(&db, "-shm");
    if shm.exists() {
        std::fs::write(&shm, b"").unwrap();
    }
    for n in 1..=3 {
        let (status, answer) = compress(&server, n).await;
        assert_eq!(status, 200, "after the emptied -shm: {answer}");
    }
    assert!(!shm.exists(), "no -shm file: WAL's index is in the heap");

    // The database and its WAL overwritten with garbage, as a disk or a
    // careless operator may do: chmod stops no root, so the bytes change.
    for file in [db.clone(), beside(&db, "-wal")] {
        if let Ok(meta) = std::fs::metadata(&file) {
            let len = usize::try_from(meta.len()).unwrap().max(4096);
            std::fs::write(&file, vec![0xA5; len]).unwrap();
        }
    }
    let before = cache_errors(&server).await;
    let mut answers = Vec::new();
    // Threads it stored (its connections may still hold their pages) and new ones.
    for n in 0..=6 {
        answers.push(compress(&server, n).await);
    }
    // At once, so the pool opens connections that read the garbage.
    let mut at_once = tokio::task::JoinSet::new();
    for n in 10..18 {
        at_once.spawn(post(server.url(), n));
    }
    for answer in at_once.join_all().await {
        answers.push(answer.unwrap_or_else(|e| {
            panic!(
                "condense did not answer ({e}); its output:\n{}",
                server.output()
            )
        }));
    }
    for (status, answer) in &answers {
        assert_eq!(*status, 200, "after the garbage: {answer}");
    }
    let warned = answers
        .iter()
        .filter(|(_, a)| {
            a["summary"]["cached"] == false && a["warnings"].to_string().contains(CACHE_DOWN)
        })
        .count();
    assert!(warned > 0, "answered uncached, saying why: {answers:?}");
    assert!(
        cache_errors(&server).await > before,
        "the cache's failures are counted; output:\n{}",
        server.output()
    );
    assert!(
        server.output().contains("summary cache unavailable"),
        "and logged: {}",
        server.output()
    );

    let health = reqwest::get(format!("{}/healthz", server.url()))
        .await
        .unwrap();
    assert_eq!(health.status(), 200, "still serving");
}

/// `chattr FLAG` on `files`: whether it took (it needs root, and a file
/// system with the flag: ext4, xfs, btrfs).
fn chattr(flag: &str, files: &[PathBuf]) -> bool {
    std::process::Command::new("chattr")
        .arg(flag)
        .args(files)
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Makes `files` mutable again however the test ends: the temp dir is
/// deleted after it, and an immutable file cannot be.
struct Mutable(Vec<PathBuf>);

impl Drop for Mutable {
    fn drop(&mut self) {
        chattr("-i", &self.0);
    }
}

#[tokio::test]
async fn immutable_cache_files_fail_cache_calls_not_the_process() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("cache.sqlite3");
    let server = Process::start(&[], &env(&db), dir.path());
    // A summary written, then served from the cache.
    for _ in 0..2 {
        let (status, answer) = compress(&server, 0).await;
        assert_eq!(status, 200, "{answer}");
    }

    // Immutable, which root cannot write through either (chmod it can).
    let files: Vec<PathBuf> = [db.clone(), beside(&db, "-wal"), beside(&db, "-shm")]
        .into_iter()
        .filter(|f| f.exists())
        .collect();
    // Written back first, as they are a while after the last write: the
    // test does not wait on the kernel's writeback.
    for f in &files {
        std::fs::File::open(f).unwrap().sync_all().unwrap();
    }
    let _undo = Mutable(files.clone());
    let test = "immutable_cache_files_fail_cache_calls_not_the_process";
    if live::immutable(test, chattr("+i", &files)).is_none() {
        return;
    }
    let before = cache_errors(&server).await;
    for n in 1..=3 {
        let (status, answer) = compress(&server, n).await;
        assert_eq!(status, 200, "immutable files: {answer}");
        assert_eq!(answer["summary"]["cached"], false, "{answer}");
        assert!(
            answer["warnings"].to_string().contains(CACHE_DOWN),
            "not cached, and says so: {answer}"
        );
    }
    assert!(
        cache_errors(&server).await > before,
        "the cache's failures are counted; output:\n{}",
        server.output()
    );
    let health = reqwest::get(format!("{}/healthz", server.url()))
        .await
        .unwrap();
    assert_eq!(health.status(), 200, "still serving");
}

/// Runs the binary until it exits, or kills it after [`process::GENEROUS`]
/// (a second process that shares the file serves instead of exiting).
fn start_or_stop(env: &[(String, String)], dir: &Path) -> std::process::Output {
    let mut child = std::process::Command::new(process::BINARY)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the condense binary starts");
    let deadline = Instant::now() + process::GENEROUS;
    while child.try_wait().unwrap().is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = child.kill();
    child.wait_with_output().unwrap()
}

#[tokio::test]
async fn a_second_process_on_the_file_is_refused_at_start_up() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("cache.sqlite3");
    let first = Process::start(&[], &env(&db), dir.path());
    let (status, answer) = compress(&first, 0).await;
    assert_eq!(status, 200, "{answer}");

    let second = start_or_stop(&env(&db), dir.path());
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(2), "refused: {stderr}");
    let refusal: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("condense: cannot start"))
        .collect();
    assert_eq!(refusal.len(), 1, "{stderr}");
    assert!(
        refusal[0].contains("in use by another process") && refusal[0].contains("cache.sqlite3"),
        "says why, naming the file: {stderr}"
    );

    // The first one serves on, its cache intact.
    let (status, again) = compress(&first, 0).await;
    assert_eq!(status, 200, "{again}");
    assert_eq!(again["summary"]["cached"], true);
}
