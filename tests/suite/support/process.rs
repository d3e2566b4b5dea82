//! The condense binary run as its own process, for tests about what only a
//! process shows: the environment it reads, its log lines, its subcommands,
//! several replicas side by side. (Tests of the HTTP API drive the router
//! in-process: `tests/suite/api/common.rs`, `support/server.rs`.)
//!
//! The child starts with an empty environment plus what the test gives it,
//! so nothing of the test run (`DATABASE_URL`, `RUST_LOG`, …) leaks in. It is
//! killed when the handle is dropped.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// The binary cargo built for these tests.
pub const BINARY: &str = env!("CARGO_BIN_EXE_condense");

/// Start-up loads the BPE encoders; on a busy 2-core machine that can take a
/// while, so waits are generous (a healthy start takes a second or two).
pub const GENEROUS: Duration = Duration::from_secs(120);

/// Everything the process wrote to stdout and stderr, line by line.
#[derive(Default)]
struct Lines {
    lines: Mutex<Vec<String>>,
    grew: Condvar,
}

pub struct Process {
    child: Child,
    lines: Arc<Lines>,
    /// The address it reported listening on.
    pub addr: SocketAddr,
}

impl Process {
    /// Runs the binary with `args`, exactly the environment `env`, in `dir`,
    /// and waits until it logs `condense listening` (in either log format);
    /// panics with its output if it exits or stays silent instead.
    pub fn start(args: &[&str], env: &[(String, String)], dir: &Path) -> Process {
        let mut child = Command::new(BINARY)
            .args(args)
            .env_clear()
            .envs(env.iter().map(|(k, v)| (k, v)))
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the condense binary starts");
        let lines = Arc::new(Lines::default());
        for out in [
            Box::new(child.stdout.take().unwrap()) as Box<dyn std::io::Read + Send>,
            Box::new(child.stderr.take().unwrap()),
        ] {
            let lines = lines.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(out).lines().map_while(Result::ok) {
                    lines.lines.lock().unwrap().push(line);
                    lines.grew.notify_all();
                }
            });
        }
        let mut p = Process {
            child,
            lines,
            addr: "0.0.0.0:0".parse().unwrap(),
        };
        let line = p.wait_for_line(|l| l.contains("condense listening"));
        p.addr = listening_addr(&line)
            .unwrap_or_else(|| panic!("no address in the line {line:?}; output:\n{}", p.output()));
        p
    }

    /// `http://127.0.0.1:PORT` (or the address it listens on, when specific).
    pub fn url(&self) -> String {
        let ip = if self.addr.ip().is_unspecified() {
            "127.0.0.1".to_string()
        } else {
            self.addr.ip().to_string()
        };
        format!("http://{ip}:{}", self.addr.port())
    }

    /// The first line of output (so far or to come) that `matches`; panics
    /// with the whole output if the process ends or [`GENEROUS`] passes first.
    pub fn wait_for_line(&mut self, matches: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + GENEROUS;
        let mut lines = self.lines.lines.lock().unwrap();
        loop {
            if let Some(l) = lines.iter().find(|l| matches(l)) {
                return l.clone();
            }
            let exited = self.child.try_wait().ok().flatten();
            if exited.is_some() || Instant::now() >= deadline {
                // Let the readers drain what is left, then report.
                drop(lines);
                std::thread::sleep(Duration::from_millis(200));
                let lines = self.lines.lines.lock().unwrap();
                if let Some(l) = lines.iter().find(|l| matches(l)) {
                    return l.clone();
                }
                panic!(
                    "condense {} before the line the test waits for; its output:\n{}",
                    match exited {
                        Some(status) => format!("exited ({status})"),
                        None => format!("said nothing matching within {GENEROUS:?}"),
                    },
                    lines.join("\n")
                );
            }
            lines = self
                .lines
                .grew
                .wait_timeout(lines, Duration::from_millis(200))
                .unwrap()
                .0;
        }
    }

    /// Stops it as an orchestrator does (SIGTERM) and waits until it has
    /// exited; panics if it is still running after [`GENEROUS`].
    pub fn terminate(&mut self) {
        // SAFETY: a signal to the child this handle owns.
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
        let deadline = Instant::now() + GENEROUS;
        while self.child.try_wait().ok().flatten().is_none() {
            assert!(
                Instant::now() < deadline,
                "condense did not stop on SIGTERM:\n{}",
                self.output()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// All its output so far.
    pub fn output(&self) -> String {
        self.lines.lines.lock().unwrap().join("\n")
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs the binary to completion (a subcommand) with exactly `env`.
pub fn run(args: &[&str], env: &[(String, String)]) -> Output {
    Command::new(BINARY)
        .args(args)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .output()
        .expect("the condense binary runs")
}

/// The `addr` of a `condense listening` line: a JSON log line's field, or a
/// text line's `addr=…`.
fn listening_addr(line: &str) -> Option<SocketAddr> {
    if let Ok(v) = serde_json::from_str::<serde_json::Value>(line) {
        return v["addr"].as_str()?.parse().ok();
    }
    let at = line.find("addr=")? + 5;
    line[at..].split_whitespace().next()?.parse().ok()
}

/// A loopback port that nothing listens on (bound, then released).
pub fn unused_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
