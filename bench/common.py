"""The chores every bench script shares: build, start and stop condense, read
its memory, load the fixture threads.

Stdlib only, like the scripts, so that each still runs with a bare
`python3` (compare_tiktoken.py runs in a virtualenv that has tiktoken and
nothing else). The scripts import it as `common`: Python puts a script's own
folder first on `sys.path`, so it is found however the script is started.

What differs between scripts is a parameter here, not a second copy: whether
condense inherits the caller's `CONDENSE_*` settings, its log level, where
its output goes, which route says it is ready and how long that may take.
"""

import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
TARGET = ROOT / "target"
BINARY = TARGET / "release" / "condense"
THREADS = ROOT / "data" / "threads"


def build(*targets, quiet=True):
    """`cargo build --release --bin condense` plus `targets` (say an example),
    in the repository the script belongs to, so that the binary measured is
    this tree's."""
    cmd = ["cargo", "build", "--release", *(["--quiet"] if quiet else []), "--bin", "condense", *targets]
    subprocess.check_call(cmd, cwd=ROOT)


def need_wrk():
    if shutil.which("wrk") is None:
        sys.exit("wrk is needed: apt-get install wrk")


def load_thread(name):
    """A fixture thread of data/threads by name, such as `large-04.openai`."""
    return json.loads((THREADS / f"{name}.json").read_text())


def free_port():
    """A loopback port nobody listens on now: the OS picks it, so that two
    runs, or a run beside the test suite, do not collide."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --------------------------------------------------------------------------
# Processes.
# --------------------------------------------------------------------------


class NotReady(SystemExit):
    """A server that exited or did not answer in time. Uncaught it ends the
    script with its message, as `sys.exit` would; a caller that expects a
    start to fail (cost_replay.py, a build that rejects a setting) catches it
    and reads `log`, the server's output when it went to a file."""

    def __init__(self, message, log=""):
        super().__init__(message)
        self.log = log


def wait_ready(url, proc, what, timeout=180.0, poll=0.05, log=None):
    """Waits until `GET url` answers 200 (listening is not serving: the
    encoders and the cache come first). Fails at once when `proc` exits,
    rather than waiting out `timeout`, and kills it when the time is up.
    http.client, not urllib: no proxy from the environment on loopback."""
    u = urlsplit(url)
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            text = Path(log).read_text(errors="replace") if log else ""
            tail = "".join(text.splitlines(keepends=True)[-20:])
            raise NotReady(f"{what} exited with {proc.returncode}" + (f":\n{tail}" if tail else ""), text)
        try:
            c = http.client.HTTPConnection(u.hostname, u.port, timeout=2)
            try:
                c.request("GET", u.path or "/")
                if c.getresponse().status == 200:
                    return
            finally:
                c.close()
        except (OSError, http.client.HTTPException):
            pass
        if time.monotonic() > deadline:
            stop(proc, timeout=5)
            raise NotReady(f"{what} did not become ready at {url} within {timeout:g} s")
        time.sleep(poll)


def stop(proc, timeout=30):
    """SIGTERM, then SIGKILL if it has not exited within `timeout` seconds."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


class Condense:
    """One condense process on a free loopback port, ready to serve.

    env: settings on top of the environment (they win over it).
    args: command-line arguments.
    clean: drop the caller's CONDENSE_* and DATABASE_URL first, so that only
        the script's settings apply; False lets a user tweak a run from the
        shell (`CONDENSE_MAX_TOTAL_CHARS=0 bench/hostile.py`).
    rust_log: RUST_LOG, or None for condense's own default.
    log: a file for stdout and stderr (kept for a failed start); else both
        are discarded.
    ready, timeout, poll: the route that must answer 200 (`/readyz` waits
        for the cache too), how long it may take, and how often to ask (a
        script that times the start asks often).
    wrap: a command to run condense under, such as valgrind.

    `ready_after` is the time from start to the first 200.
    """

    def __init__(self, binary=BINARY, env=None, args=(), *, what="condense", clean=True, rust_log="warn",
                 log=None, ready="/healthz", timeout=180.0, poll=0.05, wrap=()):
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        full = {k: v for k, v in os.environ.items()
                if k != "RUST_LOG" and not (clean and (k.startswith("CONDENSE_") or k == "DATABASE_URL"))}
        if rust_log:
            full["RUST_LOG"] = rust_log
        full["CONDENSE_LISTEN"] = f"127.0.0.1:{self.port}"
        full.update(env or {})
        self.log = open(log, "wb") if log else None
        out = self.log or subprocess.DEVNULL
        started = time.perf_counter()
        self.proc = subprocess.Popen([*wrap, str(binary), *args], env=full, stdout=out,
                                     stderr=subprocess.STDOUT if log else subprocess.DEVNULL)
        wait_ready(self.base + ready, self.proc, what, timeout, poll, log)
        self.ready_after = time.perf_counter() - started

    @property
    def pid(self):
        return self.proc.pid

    def rss_mb(self, field="VmRSS"):
        """VmRSS (now) or VmHWM (the peak) in MiB."""
        return status_kb(self.pid)[field] / 1024

    def stop(self, timeout=30):
        stop(self.proc, timeout)
        if self.log:
            self.log.close()


def status_kb(pid):
    """The kB fields of /proc/<pid>/status (VmRSS, VmHWM, ...), in the
    file's order: one read gives a consistent pair."""
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        k, _, v = line.partition(":")
        if v.endswith(" kB"):
            out[k] = int(v.split()[0])
    return out
