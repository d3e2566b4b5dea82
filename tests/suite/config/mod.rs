//! The configuration as an operator meets it: the binary's `--help`, its
//! start-up with bad values, the `--config` file and its precedence,
//! `condense config`, and the table of settings in docs/configuration.md.
//! Run the binary as its own process (`support/process.rs`), with exactly
//! the environment each test gives it.
use crate::support::{live, process};

mod file_alone;
mod layers;
mod settings_doc;
mod start_up;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What a finished run printed, and how it ended.
pub struct Ran {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

/// Runs the binary with `args` and exactly `env`, and waits for it to end;
/// panics if it is still running after [`process::GENEROUS`] (a
/// configuration that should have stopped start-up did not).
pub fn run(args: &[&str], env: &[(&str, &str)]) -> Ran {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(process::BINARY)
        .args(args)
        .env_clear()
        .envs(env.iter().copied())
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the condense binary starts");
    let deadline = Instant::now() + process::GENEROUS;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "condense {args:?} with {env:?} did not end (it should have stopped at start-up):\n{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    Ran {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// `condense config` (with `args` before it) parsed as TOML, and its stderr.
pub fn shown(args: &[&str], env: &[(&str, &str)]) -> (toml::Table, Ran) {
    let mut all = args.to_vec();
    all.push("config");
    let ran = run(&all, env);
    let table = toml::from_str(&ran.stdout)
        .unwrap_or_else(|e| panic!("`condense config` printed no TOML ({e}):\n{}", ran.stdout));
    (table, ran)
}

/// A file in a fresh directory, kept for as long as the returned guard.
pub fn file(text: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("condense.toml");
    std::fs::write(&path, text).unwrap();
    (dir, path.to_string_lossy().into_owned())
}
