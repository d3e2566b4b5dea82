#!/usr/bin/env python3
"""The proxy's added latency, the provider's own time excluded.

A stub provider that answers at once stands in for the provider, so the
difference between calling it through condense and calling it directly is
condense's own work: reading the body, counting, deciding, compressing
(continuity mode, summary from the cache), writing the body, relaying.

    cargo build --release
    python3 bench/proxy_latency.py [--requests 60] [--binary target/release/condense]

Cases, for both routes (OpenAI /v1/chat/completions, Anthropic /v1/messages),
with the largest fixture thread (large-04, ~320 messages, ~140k tokens):
  not due   a profile whose thresholds are above the thread
  due       a profile that makes it due; the first request writes the
            summary (heuristic), the measured ones reuse it from the cache
"""

import argparse
import http.client
import http.server
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ANSWER = json.dumps({"id": "stub", "choices": [{"message": {"role": "assistant", "content": "ok"}}],
                     "content": [{"type": "text", "text": "ok"}]}).encode()


class Stub(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(ANSWER)))
        self.end_headers()
        self.wfile.write(ANSWER)

    def log_message(self, *args):
        pass


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(conn, path, body, headers):
    started = time.perf_counter()
    conn.request("POST", path, body=body, headers={"content-type": "application/json", **headers})
    res = conn.getresponse()
    res.read()
    return time.perf_counter() - started, dict(res.getheaders())


def quantile(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=60)
    ap.add_argument("--binary", default=str(ROOT / "target/release/condense"))
    args = ap.parse_args()

    stub_port = free_port()
    stub = http.server.ThreadingHTTPServer(("127.0.0.1", stub_port), Stub)
    threading.Thread(target=stub.serve_forever, daemon=True).start()

    tmp = Path(tempfile.mkdtemp(prefix="condense-bench-"))
    (tmp / "profiles.toml").write_text(
        "[profiles.big]\nmax_messages_before_summary = 100000\nmax_tokens_before_summary = 100000000\n"
        "context_window = 1000000\n\n[profiles.due]\nmax_messages_before_summary = 30\n"
        "context_window = 1000000\n")
    port = free_port()
    env = dict(os.environ,
               CONDENSE_LISTEN=f"127.0.0.1:{port}",
               CONDENSE_PROXY_OPENAI_URL=f"http://127.0.0.1:{stub_port}/v1",
               CONDENSE_PROXY_ANTHROPIC_URL=f"http://127.0.0.1:{stub_port}",
               CONDENSE_PROFILES_FILE=str(tmp / "profiles.toml"),
               CONDENSE_DATABASE_URL=f"sqlite://{tmp / 'cache.sqlite3'}?mode=rwc",
               RUST_LOG="warn")
    server = subprocess.Popen([args.binary], env=env)
    try:
        for _ in range(200):
            try:
                http.client.HTTPConnection("127.0.0.1", port, timeout=1).request("GET", "/healthz")
                break
            except OSError:
                time.sleep(0.05)
        rows = []
        for route, path, fixture in [("openai", "/v1/chat/completions", "large-04.openai.json"),
                                     ("anthropic", "/v1/messages", "large-04.anthropic.json")]:
            t = json.loads((ROOT / "tests/fixtures/threads" / fixture).read_text())
            body = {"model": t["model"], "max_tokens": 16, "messages": t["messages"]}
            if "system" in t:
                body["system"] = t["system"]
            if t.get("tools"):
                body["tools"] = t["tools"]
            raw = json.dumps(body).encode()
            direct = http.client.HTTPConnection("127.0.0.1", stub_port)
            via = http.client.HTTPConnection("127.0.0.1", port)
            for case, profile in [("not due", "big"), ("due, summary cached", "due")]:
                headers = {"x-condense-profile": profile}
                _, h = post(via, path, raw, headers)  # warm-up; writes the summary when due
                expect = "true" if profile == "due" else "false"
                assert h.get("x-condense-compressed") == expect, h
                d, v = [], []
                for _ in range(args.requests):
                    d.append(post(direct, path.replace("/v1/messages", "/v1/messages"), raw, {})[0])
                    took, h = post(via, path, raw, headers)
                    assert h.get("x-condense-compressed") == expect, h
                    if profile == "due":
                        assert h.get("x-condense-summary-cached") == "true", h
                    v.append(took)
                added = [b - a for a, b in zip(d, v)]
                rows.append((route, case, len(raw), statistics.median(d), quantile(d, 0.99),
                             statistics.median(v), quantile(v, 0.99),
                             statistics.median(added), quantile(added, 0.99)))
        rss = next((l.split()[1] for l in Path(f"/proc/{server.pid}/status").read_text().splitlines()
                    if l.startswith("VmHWM")), "?")
    finally:
        server.terminate()
        stub.shutdown()
    print(f"{'route':10} {'case':22} {'body KB':>8} {'direct p50/p99 ms':>18} {'via p50/p99 ms':>16} {'added p50/p99 ms':>17}")
    for r in rows:
        print(f"{r[0]:10} {r[1]:22} {r[2] / 1024:8.0f} {r[3] * 1e3:8.2f}/{r[4] * 1e3:<8.2f} "
              f"{r[5] * 1e3:7.1f}/{r[6] * 1e3:<8.1f} {r[7] * 1e3:8.1f}/{r[8] * 1e3:<8.1f}")
    print(f"peak RSS of condense: {rss} kB; {args.requests} requests per case, sequential, keep-alive; "
          f"{os.cpu_count()} cores shared with whatever else runs")


if __name__ == "__main__":
    sys.exit(main())
