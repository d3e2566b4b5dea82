#!/usr/bin/env python3
"""Latency condense's drop-in proxy adds on top of the provider's own time.

    python3 bench/proxy_latency.py [-n 100] [--warmup 10] [--bin target/release/condense]
                                   [--llm http://127.0.0.1:8089 [--llm-n 20]] [--json FILE]

Stdlib only. The script starts, in a temporary directory:

* a **stub provider** (this file with `stub PORT`, in its own process): a tiny
  HTTP/1.1 keep-alive server that reads the body and answers a fixed small chat
  completion (`.../chat/completions`) or message (`/v1/messages`) at once, so
  the provider's own time is ~0;
* **condense** (the release binary), its proxy routes pointing at the stub, an
  embedded SQLite cache in the temporary directory and two profiles:
  `big` (thresholds above the thread, a 1M window: never due) and `due`
  (`max_messages_before_summary = 30`).

For each route (OpenAI `/v1/chat/completions`, Anthropic `/v1/messages`) and
each case it sends the fixture thread (large-04, ~320 messages, ~140k tokens)
N times directly to the stub and N times through condense, interleaved
(A B, B A, ...) on two keep-alive connections, after a warm-up, and reports
p50/p99 of each and of the paired difference (proxied - direct of the same
iteration): the time condense adds. Cases:

* `not_due`: profile `big`; every response must say `x-condense-compressed: false`
  and the stub must receive the client's body byte for byte;
* `tiny`: a 2-message request, profile `big`: condense's fixed cost per request
  (HTTP in and out, the forwarding client, the blocking-pool hops, one cache lookup);
* `due_cached`: profile `due`; one request first writes the summary (heuristic:
  no summarizer LLM is configured) and caches it; every measured response must
  say `x-condense-compressed: true`, carry no note, and `x-condense-summary-cached`
  must be `true` or absent (absent: the cached summary was continued as it is,
  nothing new to summarize); the stub must receive the same compressed body on
  every turn (checked by its sha256 after the warm-up and at the end).

`not_due` runs first, on an empty cache (a summary cached under `due` is not
reused under `big`: the continuity key includes the profile).

A reference row per route times `POST /v1/tokens` with the same thread
(receive, JSON and thread parse, token count; no cache, no forwarding), to tell
what part of the added time is counting. condense's CPU time per request
(utime+stime from /proc) and its peak RSS (VmHWM) are reported as well.

With `--llm URL` a second condense instance proxies to a real server (the local
llama-server), with a tiny thread and few requests: the end-to-end picture.
"""

import argparse
import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from http.server import ThreadingHTTPServer
from pathlib import Path

import common
from common import Conn, pct

ROOT = common.ROOT

PROFILES_TOML = """\
[profiles.big]
max_messages_before_summary = 100000
max_tokens_before_summary = 100000000
context_window = 1000000

[profiles.due]
max_messages_before_summary = 30
"""

OPENAI_ANSWER = json.dumps(
    {
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "created": 0,
        "model": "stub",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "ok"},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }
).encode()

ANTHROPIC_ANSWER = json.dumps(
    {
        "id": "msg_bench",
        "type": "message",
        "role": "assistant",
        "model": "stub",
        "content": [{"type": "text", "text": "ok"}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
).encode()


# --------------------------------------------------------------------------
# The stub provider (runs in its own process: `proxy_latency.py stub PORT`).
# --------------------------------------------------------------------------


class StubHandler(common.QuietHandler):
    last = {"path": None, "body": b"", "count": 0}

    def setup(self):
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def do_POST(self):
        n = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(n)
        # Kept as is: parsing or hashing here would make the provider's time
        # depend on the body's size, and so differ between direct and proxied.
        StubHandler.last = {"path": self.path, "body": body, "count": StubHandler.last["count"] + 1}
        if self.path.endswith("/chat/completions"):
            self.send_json(OPENAI_ANSWER)
        elif self.path.endswith("/v1/messages"):
            self.send_json(ANTHROPIC_ANSWER)
        else:
            self.send_json(b'{"error":"not found"}', "404 Not Found")

    def do_GET(self):
        # /_last: what the last POST carried (for the checks, off the timed path).
        last = StubHandler.last
        body = last["body"]
        info = {"path": last["path"], "bytes": len(body), "count": last["count"],
                "sha256": hashlib.sha256(body).hexdigest(), "messages": None}
        try:
            info["messages"] = len(json.loads(body)["messages"])
        except Exception:
            pass
        self.send_json(json.dumps(info).encode())


def run_stub(port):
    server = ThreadingHTTPServer(("127.0.0.1", port), StubHandler)
    server.daemon_threads = True
    print("ready", flush=True)
    server.serve_forever()


# --------------------------------------------------------------------------
# Client side.
# --------------------------------------------------------------------------


def proc_status(pid):
    """VmHWM and VmRSS in whole MiB."""
    return {k: v // 1024 for k, v in common.status_kb(pid).items() if k in ("VmHWM", "VmRSS")}


def cpu_seconds(pid):
    """utime + stime of a process, in seconds (all its threads)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except OSError:
        return float("nan")


def start_stub():
    """The stub provider in a process of its own, so that its time does not
    compete with this script's client for one interpreter: (process, port)."""
    port = common.free_port()
    proc = subprocess.Popen([sys.executable, __file__, "stub", str(port)], stdout=subprocess.PIPE, text=True)
    if proc.stdout.readline().strip() != "ready":  # printed once it listens
        common.stop(proc)
        sys.exit("the stub provider did not start")
    return proc, port


def start_condense(binary, workdir, name, openai_url, anthropic_url=None, **env):
    """condense proxying to these provider URLs, with its own SQLite cache and
    the profiles of `workdir`, its output in `workdir/NAME.log`, and no other
    settings: every other CONDENSE_*, DATABASE_URL and RUST_LOG is dropped."""
    env.update(CONDENSE_PROXY_OPENAI_URL=openai_url,
               CONDENSE_DATABASE_URL=f"sqlite://{workdir}/{name}-cache.sqlite3?mode=rwc",
               CONDENSE_PROFILES_FILE=str(workdir / "profiles.toml"))
    if anthropic_url:
        env["CONDENSE_PROXY_ANTHROPIC_URL"] = anthropic_url
    return common.Condense(binary, env, what=f"condense ({name})", rust_log=None, log=workdir / f"{name}.log")


ROUTES = {
    # route: (fixture, path at condense, path at the provider given the base URLs below)
    "openai": ("large-04.openai", "/v1/chat/completions", "/v1/chat/completions"),
    "anthropic": ("large-04.anthropic", "/v1/messages", "/v1/messages"),
}


def load_body(route):
    fixture = common.load_thread(ROUTES[route][0])
    tokens_req = dict(fixture)  # /v1/tokens takes model, messages, system, tools
    if route == "anthropic":
        fixture["max_tokens"] = 1024
        tokens_req["format"] = "anthropic"
    # Compact JSON, as SDKs send it.
    dump = lambda d: json.dumps(d, separators=(",", ":"), ensure_ascii=False).encode()
    return dump(fixture), dump(tokens_req), len(fixture["messages"])


TINY_THREAD = [
    {"role": "system", "content": "You answer in one word."},
    {"role": "user", "content": "Say hello."},
]


def tiny_body(route):
    """A 2-message request: condense's fixed cost per request, and the --llm thread."""
    if route == "openai":
        b = {"model": "bench", "messages": TINY_THREAD, "max_tokens": 8, "temperature": 0}
    else:
        b = {"model": "bench", "system": TINY_THREAD[0]["content"],
             "messages": TINY_THREAD[1:], "max_tokens": 8, "temperature": 0}
    return json.dumps(b, separators=(",", ":")).encode()


def stub_last(stub):
    _, status, _, data = stub.request("GET", "/_last")
    assert status == 200
    return json.loads(data)


REPORT_HEADERS = ("x-condense-compressed", "x-condense-summary-cached", "x-condense-note",
                  "x-condense-tokens-before", "x-condense-tokens-after")


def report_of(hdrs):
    return {k[len("x-condense-"):]: hdrs.get(k) for k in REPORT_HEADERS}


def check_report(case, rep):
    """None when the headers say what the case measures, else why not."""
    if rep["note"]:
        return f"note: {rep['note']}"
    if case in ("not_due", "tiny"):
        return None if rep["compressed"] == "false" else f"expected not compressed, got {rep}"
    if rep["compressed"] != "true":
        return f"expected compressed, got {rep}"
    if rep["summary-cached"] not in (None, "true"):
        return f"expected a cached or continued summary, got {rep}"
    return None


def measure_pair(direct, proxied, n, warmup, body, route, profile, case, stub):
    path_c, path_p = ROUTES[route][1], ROUTES[route][2]
    h_direct = common.api_headers(route)
    h_proxy = dict(h_direct, **{"x-condense-profile": profile})

    def one_direct():
        dt, st, _, _ = direct.request("POST", path_p, body, h_direct)
        assert st == 200, f"stub answered {st}"
        return dt

    def one_proxied():
        dt, st, hdrs, data = proxied.request("POST", path_c, body, h_proxy)
        assert st == 200, f"condense answered {st}: {data[:300]!r}"
        expected = OPENAI_ANSWER if route == "openai" else ANTHROPIC_ANSWER
        assert data == expected, "the answer was not relayed unchanged"
        return dt, report_of(hdrs)

    first = None
    if case == "due_cached":
        # Writes the summary and caches it (not timed).
        _, first = one_proxied()
        if first["compressed"] != "true" or first["note"]:
            sys.exit(f"{route}/{case}: the first request did not compress: {first}")
    for _ in range(warmup):
        one_direct()
        one_proxied()
    # The stub keeps only the last body: look right after a proxied request.
    last_after_warmup = stub_last(stub)
    d, p, reports = [], [], []
    pid = measure_pair.condense_pid
    pid_cpu0 = cpu_seconds(pid)
    for i in range(n):
        if i % 2 == 0:
            td = one_direct()
            tp, rep = one_proxied()
        else:
            tp, rep = one_proxied()
            td = one_direct()
        d.append(td)
        p.append(tp)
        reports.append(rep)
    cpu = (cpu_seconds(pid) - pid_cpu0) / n
    # One more (untimed) proxied request, so the stub's last body is condense's.
    _, rep = one_proxied()
    reports.append(rep)
    last = stub_last(stub)
    problems = {check_report(case, r) for r in reports} - {None}
    if problems:
        sys.exit(f"{route}/{case}: not measuring what we think: {sorted(problems)[:3]}")
    # Identical requests, so identical headers on every turn.
    if len({json.dumps(r, sort_keys=True) for r in reports}) != 1:
        sys.exit(f"{route}/{case}: headers differ between turns: {reports[:2]} ...")
    if last["path"] != path_p:
        sys.exit(f"{route}/{case}: the provider was called at {last['path']}, not {path_p}")
    if case in ("not_due", "tiny") and last["sha256"] != hashlib.sha256(body).hexdigest():
        sys.exit(f"{route}/{case}: the provider did not get the client's body unchanged")
    if case == "due_cached" and last["sha256"] != last_after_warmup["sha256"]:
        sys.exit(f"{route}/{case}: the forwarded body changed between turns")
    return {
        "direct": d,
        "proxied": p,
        "diff": [b - a for a, b in zip(d, p)],
        "report": reports[0],
        "reports_checked": len(reports),
        "first_report": first,
        "forwarded_bytes": last["bytes"],
        "forwarded_messages": last["messages"],
        "condense_cpu_s": cpu,
    }


def measure_tokens(conn, n, warmup, tokens_body):
    h = {"content-type": "application/json"}
    out = []
    for i in range(warmup + n):
        dt, st, _, data = conn.request("POST", "/v1/tokens", tokens_body, h)
        assert st == 200, f"/v1/tokens answered {st}: {data[:300]!r}"
        if i >= warmup:
            out.append(dt)
    return out, json.loads(data)["total_tokens"]


def kb(n):
    return f"{n / 1e3:6.0f}k" if n >= 10_000 else f"{n:6d}b"


def ms(x):
    return f"{x * 1000:8.2f}"


def run_stub_bench(args, workdir, results):
    stub_proc, stub_port = start_stub()
    try:
        base = f"http://127.0.0.1:{stub_port}"
        server = start_condense(args.bin, workdir, "stub", base + "/v1", base)
        measure_pair.condense_pid = server.pid
        results["rss_start_mib"] = proc_status(server.pid)
        try:
            direct, proxied, stub = Conn(stub_port), Conn(server.port), Conn(stub_port)
            rows = []
            bodies = {r: load_body(r) for r in ROUTES}
            # not_due first, on an empty cache (see the module docstring).
            tiny = {r: tiny_body(r) for r in ROUTES}
            for case, profile in (("not_due", "big"), ("tiny", "big"), ("due_cached", "due")):
                for route in ROUTES:
                    body, nmsg = (tiny[route], 2) if case == "tiny" else bodies[route][::2]
                    r = measure_pair(direct, proxied, args.n, args.warmup, body, route,
                                     profile, case, stub)
                    r.update(route=route, case=case, profile=profile, body_bytes=len(body),
                             messages=nmsg, rss_mib=proc_status(server.pid))
                    rows.append(r)
            ref = []
            for route in ROUTES:
                _, tokens_body, _ = bodies[route]
                t, total = measure_tokens(proxied, args.n, args.warmup, tokens_body)
                ref.append({"route": route, "times": t, "total_tokens": total,
                            "body_bytes": len(tokens_body)})
            results["stub"] = rows
            results["tokens_reference"] = ref
            results["rss_end_mib"] = proc_status(server.pid)
            for c in (direct, proxied, stub):
                c.close()
        finally:
            server.stop()
    finally:
        common.stop(stub_proc)


def run_llm_bench(args, workdir, results):
    url = args.llm.rstrip("/")
    host_port = int(url.rsplit(":", 1)[1])
    server = start_condense(args.bin, workdir, "llm", url + "/v1", url)
    measure_pair.condense_pid = server.pid
    rows = []
    try:
        direct, proxied = Conn(host_port), Conn(server.port)
        for route in ROUTES:
            body = tiny_body(route)
            path = ROUTES[route][1]
            h = common.api_headers(route)
            hp = dict(h, **{"x-condense-profile": "big"})
            d, p = [], []
            for i in range(args.warmup_llm + args.llm_n):
                order = (0, 1) if i % 2 == 0 else (1, 0)
                times = [None, None]
                for which in order:
                    conn, hh = (direct, h) if which == 0 else (proxied, hp)
                    dt, st, hdrs, data = conn.request("POST", path, body, hh)
                    if st != 200:
                        sys.exit(f"llm {route}: {'direct' if which == 0 else 'proxied'} answered {st}: {data[:300]!r}")
                    if which == 1 and (hdrs.get("x-condense-compressed") != "false"
                                       or hdrs.get("x-condense-note")):
                        sys.exit(f"llm {route}: unexpected report {report_of(hdrs)}")
                    times[which] = dt
                if i >= args.warmup_llm:
                    d.append(times[0])
                    p.append(times[1])
            rows.append({"route": route, "direct": d, "proxied": p,
                         "diff": [b - a for a, b in zip(d, p)], "body_bytes": len(body)})
        direct.close()
        proxied.close()
    finally:
        server.stop()
    results["llm"] = rows


def print_tables(results, args):
    print(f"condense {results['binary']} @ {results['commit']}{' (dirty tree)' if results['dirty'] else ''}")
    print(f"host: {os.cpu_count()} CPUs, load avg at start {results['loadavg_start']}, "
          f"at end {results['loadavg_end']}; client, stub and condense share them")
    print(f"N = {args.n} interleaved pairs per row after {args.warmup} warm-up pairs; times in ms; "
          "added = proxied - direct of the same iteration\n")
    hdr = (f"{'route':<10} {'case':<11} {'body':>7} {'fwd':>7}  {'direct p50':>10} {'p99':>7}  "
           f"{'proxied p50':>11} {'p99':>7}  {'ADDED p50':>9} {'p99':>7}  {'ms/MB':>6} {'cpu ms':>6}  headers")
    print(hdr)
    print("-" * len(hdr))
    # Added ms per MB of request body; meaningless for the tiny thread.
    per_mb = lambda r: ("-" if r["case"] == "tiny"
                        else f"{pct(r['diff'], 50) * 1e9 / r['body_bytes']:.1f}")
    for r in results["stub"]:
        rep = r["report"]
        hs = f"compressed={rep['compressed']}"
        if rep["summary-cached"] is not None:
            hs += f" cached={rep['summary-cached']}"
        hs += f" tokens {rep['tokens-before']}->{rep['tokens-after']}"
        print(f"{r['route']:<10} {r['case']:<11} {kb(r['body_bytes'])} "
              f"{kb(r['forwarded_bytes'])}  {ms(pct(r['direct'], 50)):>10} {ms(pct(r['direct'], 99)):>7}  "
              f"{ms(pct(r['proxied'], 50)):>11} {ms(pct(r['proxied'], 99)):>7}  "
              f"{ms(pct(r['diff'], 50)):>9} {ms(pct(r['diff'], 99)):>7}  "
              f"{per_mb(r):>6} {r['condense_cpu_s'] * 1000:6.1f}  {hs}")
    print()
    print("body: request bytes from the client; fwd: bytes the provider received through condense "
          f"({', '.join(str(r['forwarded_messages']) + ' msgs' for r in results['stub'])}); "
          "ms/MB: added p50 per MB of request body; cpu ms: condense's CPU time (all threads) per proxied request")
    for r in results["stub"]:
        if r["first_report"]:
            f = r["first_report"]
            print(f"  {r['route']}/{r['case']}: the untimed first request wrote the summary: "
                  f"compressed={f['compressed']} cached={f['summary-cached']} "
                  f"tokens {f['tokens-before']}->{f['tokens-after']}")
    print("\nreference: POST /v1/tokens with the same thread (count only: no cache, no forwarding)")
    for r in results["tokens_reference"]:
        print(f"  {r['route']:<10} p50 {ms(pct(r['times'], 50))} p99 {ms(pct(r['times'], 99))}  "
              f"({r['total_tokens']} tokens, {r['body_bytes'] / 1e3:.0f}k body)")
    print(f"\ncondense RSS (MiB): at start {results['rss_start_mib']}, at end {results['rss_end_mib']} "
          "(VmHWM = peak)")
    if "llm" in results:
        print(f"\nreal provider {args.llm}: tiny thread (2 messages, max_tokens 8), "
              f"{args.llm_n} interleaved pairs after {args.warmup_llm} warm-up pairs, profile big (not due)")
        for r in results["llm"]:
            print(f"  {r['route']:<10} direct p50 {ms(pct(r['direct'], 50))} p99 {ms(pct(r['direct'], 99))}   "
                  f"proxied p50 {ms(pct(r['proxied'], 50))} p99 {ms(pct(r['proxied'], 99))}   "
                  f"added p50 {ms(pct(r['diff'], 50))} p99 {ms(pct(r['diff'], 99))}")


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "stub":
        return run_stub(int(sys.argv[2]))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-n", type=int, default=100, help="timed pairs per case (default 100)")
    ap.add_argument("--warmup", type=int, default=10, help="untimed pairs first (default 10)")
    ap.add_argument("--bin", type=Path, default=common.BINARY)
    ap.add_argument("--llm", help="also proxy to this real server, e.g. http://127.0.0.1:8089")
    ap.add_argument("--llm-n", type=int, default=20)
    ap.add_argument("--warmup-llm", type=int, default=3)
    ap.add_argument("--json", type=Path, help="write every sample here")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory (logs)")
    args = ap.parse_args()
    if not args.bin.exists():
        sys.exit(f"{args.bin} is missing: cargo build --release")

    git = lambda *a: subprocess.run(["git", "-C", str(ROOT), *a], capture_output=True,
                                    text=True).stdout.strip()
    results = {
        "binary": str(args.bin),
        "commit": git("rev-parse", "--short", "HEAD"),
        "dirty": bool(git("status", "--porcelain", "--untracked-files=no")),
        "loadavg_start": os.getloadavg(),
    }
    workdir = Path(tempfile.mkdtemp(prefix="condense-proxy-bench-"))
    try:
        (workdir / "profiles.toml").write_text(PROFILES_TOML)
        run_stub_bench(args, workdir, results)
        if args.llm:
            run_llm_bench(args, workdir, results)
    finally:
        if args.keep:
            print(f"kept {workdir}", file=sys.stderr)
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    results["loadavg_end"] = os.getloadavg()
    print_tables(results, args)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
