"""The chores every bench script shares: build, start and stop condense, read
its memory, talk to it, load the fixture threads.

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
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
TARGET = ROOT / "target"
BINARY = TARGET / "release" / "condense"
THREADS = ROOT / "data" / "threads"


# tiktoken caches https://openaipublic.blob.core.windows.net/encodings/NAME.tiktoken
# as sha1(url) in TIKTOKEN_CACHE_DIR; it cannot download them here, so the
# scripts put tiktoken-rs's copies there under these names (bench/run.sh
# carries the same two names, in bash).
TIKTOKEN_RANK_FILES = {
    "cl100k_base": "9b5ad71b2ce5302211f9c61530b329a4922fc6a4",
    "o200k_base": "fb374d419588a4632f3f557e76b4b70aebbca790",
}


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


# --------------------------------------------------------------------------
# Talking HTTP.
# --------------------------------------------------------------------------


class Conn:
    """One keep-alive HTTP/1.1 connection with TCP_NODELAY, as an SDK keeps
    one: connecting is not part of a request's time."""

    def __init__(self, port, timeout=300):
        self.port = port
        self.timeout = timeout
        self.c = None

    def _connect(self):
        self.c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
        self.c.connect()
        self.c.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def request(self, method, path, body=None, headers=None):
        """(seconds, status, headers as a lower-cased dict, body bytes)."""
        for attempt in (0, 1):
            if self.c is None:
                self._connect()
            t0 = time.perf_counter()
            try:
                self.c.request(method, path, body=body, headers=headers or {})
                r = self.c.getresponse()
                data = r.read()
                break
            except (BrokenPipeError, ConnectionResetError, http.client.RemoteDisconnected):
                # The server closed an idle keep-alive connection: reconnect
                # (untimed) and send again, once.
                self.c.close()
                self.c = None
                if attempt:
                    raise
        dt = time.perf_counter() - t0
        hdrs = {k.lower(): v for k, v in r.getheaders()}
        if r.will_close:
            self.c.close()
            self.c = None
        return dt, r.status, hdrs, data

    def close(self):
        if self.c is not None:
            self.c.close()


def api_headers(fmt):
    """What an SDK sends to the OpenAI (`openai`) or Anthropic API: the
    proxy forwards the key, the stand-in providers ignore it."""
    if fmt == "openai":
        return {"content-type": "application/json", "authorization": "Bearer sk-bench"}
    return {"content-type": "application/json", "x-api-key": "sk-ant-bench", "anthropic-version": "2023-06-01"}


class QuietHandler(BaseHTTPRequestHandler):
    """Base of the scripts' stand-in providers: HTTP/1.1 keep-alive (as a
    provider's API is), no access log on the terminal, and answers written
    head and body at once (two writes would wait on Nagle and delayed ACKs,
    and the stand-in's time would no longer be ~0)."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send_json(self, body, status="200 OK"):
        head = (f"HTTP/1.1 {status}\r\ncontent-type: application/json\r\n"
                f"content-length: {len(body)}\r\n\r\n").encode()
        self.wfile.write(head + body)


def serve(handler):
    """`handler` on a free loopback port, in daemon threads of this process
    (they end with the script)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def pct(xs, p):
    """Percentile by linear interpolation between closest ranks (numpy's default)."""
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = (len(xs) - 1) * p / 100
    lo = int(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)
