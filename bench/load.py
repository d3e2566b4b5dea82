#!/usr/bin/env python3
"""Load and overload on loopback: throughput, latency, errors and memory.

    bench/load.py [--duration 10] [--connections 8] [--no-build]
                  [--limit 2] [--overload-connections 64] [--no-overload]

Builds condense (release) and drives it with wrk (`-t2`, bounded time, on
loopback; `bench/load.lua` on top of `bench/bodies.lua`):

* normal: condense with no cache, `POST /v1/tokens` with medium-02 (a
  realistic coding-agent thread) and `POST /v1/compress` with the same
  thread, forced, `heuristic` (a summary written on every request), each
  after a 2 s warm-up, with `--connections`;
* overloaded: a second condense with `CONDENSE_MAX_CONCURRENCY=--limit` and
  `--overload-connections` connections on `/v1/compress`, far more than it
  admits, while `/healthz` is polled every 0.2 s.

Prints, per run: requests/s, latency percentiles, answers by status, wrk's
socket errors and timeouts (`--timeout`, generous: a timeout is a request
that hung), and condense's peak RSS (`VmHWM`); after each run it scrapes
`GET /metrics` and prints what the server counted. The overloaded run must
shed (503) with `Retry-After` on every 503, time nothing out, and keep
`/healthz` at 200, or the script exits 1. Needs wrk (Debian's `wrk`).
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import common

ROOT = common.ROOT
THREAD = "medium-02.openai"


def bodies(work):
    """The body files for bodies.lua: one body each, sent on every request."""
    thread = common.load_thread(THREAD)
    request = {k: thread[k] for k in ("model", "messages", "tools") if k in thread}
    compress = dict(request, force=True, summarizer={"strategy": "heuristic"})
    files = {}
    for name, body in [("tokens", request), ("compress", compress)]:
        path = work / f"{name}.bodies"
        path.write_text(json.dumps(body))
        files[name] = path
    return files


def wrk(url, body, duration, connections, timeout):
    env = dict(os.environ, BODIES=str(body), MODE="cycle", BENCH_DIR=str(ROOT / "bench"))
    out = subprocess.run(
        ["wrk", "-t2", f"-c{connections}", f"-d{duration}s", f"--timeout={timeout}s",
         "-s", str(ROOT / "bench/load.lua"), url],
        env=env, capture_output=True, text=True, check=True,
    )
    r = {"statuses": {}, "latency_ms": {}}
    for line in out.stdout.splitlines():
        f = line.split()
        if not f or f[0] != "LOAD":
            continue
        if f[1] == "status":
            r["statuses"][int(f[2])] = int(f[3])
        elif f[1] == "retry_after":
            r["retry_after"] = int(f[2])
        elif f[1] == "socket_errors":
            r["connect"], r["read"], r["write"], r["timeouts"] = map(int, f[2:6])
        elif f[1] == "requests":
            r["requests"], micros = int(f[2]), int(f[3])
            r["rps"] = r["requests"] / (micros / 1e6) if micros else 0.0
        elif f[1] == "latency_us":
            r["latency_ms"][f[2]] = int(f[3]) / 1000
    if "rps" not in r:
        sys.exit(f"wrk printed no summary:\n{out.stdout}\n{out.stderr}")
    return r


def scrape(base):
    """What the server counted: (metric, labels) -> value, for condense's samples."""
    with urllib.request.urlopen(f"{base}/metrics", timeout=10) as res:
        text = res.read().decode()
    out = {}
    for m in re.finditer(r"^(condense_\w+)(\{[^}]*\})? (\S+)$", text, re.M):
        out[(m.group(1), m.group(2) or "")] = float(m.group(3))
    return out


def counted(metrics, name, **labels):
    """The sum of `name`'s series whose labels include `labels`."""
    want = [f'{k}="{v}"' for k, v in labels.items()]
    return sum(v for (n, l), v in metrics.items() if n == name and all(w in l for w in want))


class HealthProbe(threading.Thread):
    """Polls /healthz while the overload runs: it must never be shed."""

    def __init__(self, base):
        super().__init__(daemon=True)
        self.base, self.stopping = base, threading.Event()
        self.statuses, self.worst_ms = {}, 0.0

    def run(self):
        while not self.stopping.is_set():
            started = time.monotonic()
            try:
                with urllib.request.urlopen(f"{self.base}/healthz", timeout=30) as res:
                    status = res.status
            except urllib.error.HTTPError as e:
                status = e.code
            except Exception:
                status = "error"
            self.worst_ms = max(self.worst_ms, (time.monotonic() - started) * 1000)
            self.statuses[status] = self.statuses.get(status, 0) + 1
            self.stopping.wait(0.2)


def row(name, conns, r, rss):
    lat = r["latency_ms"]
    statuses = ", ".join(f"{s}: {n}" for s, n in sorted(r["statuses"].items()))
    socket = f"{r['connect']}/{r['read']}/{r['write']}"
    return (f"| {name} | {conns} | {r['rps']:.1f} | {lat['50']:.1f} | {lat['90']:.1f} | {lat['99']:.1f} | "
            f"{lat['max']:.1f} | {statuses} | {socket} | {r['timeouts']} | {rss:.0f} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--duration", type=int, default=10, help="seconds per measured run")
    ap.add_argument("--connections", type=int, default=8)
    ap.add_argument("--limit", type=int, default=2, help="CONDENSE_MAX_CONCURRENCY of the overloaded run")
    ap.add_argument("--overload-connections", type=int, default=64)
    ap.add_argument("--timeout", type=int, default=60, help="wrk's request timeout, seconds")
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--no-overload", action="store_true")
    ap.add_argument("--condense", default=str(common.BINARY))
    args = ap.parse_args()
    common.need_wrk()
    if not args.no_build:
        common.build()

    work = Path(tempfile.mkdtemp(prefix="condense-load-"))
    files = bodies(work)
    header = ("| run | connections | req/s | p50 ms | p90 ms | p99 ms | max ms | answers by status | "
              "socket errors connect/read/write | timeouts | peak RSS MB |\n|---|---|---|---|---|---|---|---|---|---|---|")
    rows, notes, failures = [], [], []

    # condense with no cache and only the settings given here.
    server = common.Condense(args.condense, {"CONDENSE_DATABASE_URL": "off"})
    try:
        rss_start = server.rss_mb("VmHWM")
        for name in ("tokens", "compress"):
            url = f"{server.base}/v1/{name}"
            wrk(url, files[name], 2, args.connections, args.timeout)
            r = wrk(url, files[name], args.duration, args.connections, args.timeout)
            rows.append(row(f"/v1/{name}", args.connections, r, server.rss_mb("VmHWM")))
        m = scrape(server.base)
        notes.append(f"normal: peak RSS {rss_start:.0f} MB after start; the server counted "
                     f"{counted(m, 'condense_http_requests_total', route='/v1/tokens'):.0f} /v1/tokens and "
                     f"{counted(m, 'condense_http_requests_total', route='/v1/compress'):.0f} /v1/compress answers, "
                     f"{counted(m, 'condense_problems_total'):.0f} problems, "
                     f"{counted(m, 'condense_summaries_written_total', strategy='heuristic'):.0f} summaries written")
    finally:
        server.stop()

    if not args.no_overload:
        server = common.Condense(args.condense, {"CONDENSE_DATABASE_URL": "off",
                                                 "CONDENSE_MAX_CONCURRENCY": str(args.limit)})
        probe = HealthProbe(server.base)
        try:
            probe.start()
            r = wrk(f"{server.base}/v1/compress", files["compress"], args.duration, args.overload_connections,
                    args.timeout)
            probe.stopping.set()
            probe.join()
            rows.append(row(f"/v1/compress, limit {args.limit}", args.overload_connections, r,
                            server.rss_mb("VmHWM")))
            m = scrape(server.base)
        finally:
            server.stop()
        shed = r["statuses"].get(503, 0)
        notes.append(f"overloaded: {shed} answers 503, {r['retry_after']} of them with Retry-After; "
                     f"wrk timeouts {r['timeouts']}; /healthz during the run: {probe.statuses}, "
                     f"slowest {probe.worst_ms:.0f} ms; the server counted "
                     f"{counted(m, 'condense_shed_requests_total'):.0f} shed, "
                     f"{counted(m, 'condense_timed_out_requests_total'):.0f} timed out")
        if shed == 0:
            failures.append(f"nothing was shed: does this build read CONDENSE_MAX_CONCURRENCY ({args.limit})?")
        if r["retry_after"] != shed:
            failures.append(f"{shed - r['retry_after']} answers 503 without Retry-After")
        if r["timeouts"]:
            failures.append(f"{r['timeouts']} requests hung past {args.timeout} s")
        if set(probe.statuses) != {200}:
            failures.append(f"/healthz did not always answer 200: {probe.statuses}")

    print(f"\nwrk -t2 -d{args.duration}s --timeout={args.timeout}s on loopback, thread {THREAD}, no cache\n")
    print(header)
    print("\n".join(rows))
    print()
    for n in notes:
        print(f"* {n}")
    for f in failures:
        print(f"FAILED: {f}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
