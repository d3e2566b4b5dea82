#!/usr/bin/env python3
"""Peak and after-burst RSS of a release build under hostile-but-legal load.

    bench/hostile_memory.py [--no-build] [--condense target/release/condense]
                            [--cases compress,proxy16,proxy100] [--env K=V ...]

Starts condense (no cache) with the proxy pointed at a stub provider that
reads each request and never answers until the bench lets it go (a stalling
provider), then runs each case:

- compress: 16 concurrent worst-shape bodies of 6.5 MB to /v1/compress: one
  message of ~100,000 small text parts (each part a JSON object, the costliest
  thing per byte the node limit lets through), ASCII text, under every limit;
- compress1 / proxy1 (not run by default): one such request alone, for a
  request's own cost (its peak minus the idle RSS);
- proxy16 / proxy100: 16 / 100 concurrent 7.9 MB bodies of the same shape to
  /v1/chat/completions (the text is CJK, 3 bytes a character, so the thread
  stays under the character limit and is compressed, not refused);
- proxy64 (not run by default): 64 concurrent 3.9 MB ones, more than the
  places, so most are forwarded unchanged: what many mid-sized requests leave;
- proxy8 / proxy8x3: 8 concurrent 3 MB bodies of that shape with the provider
  stalled, once and in three waves (the second and third find the heap the
  first left);
- scalars16: 16 concurrent /v1/compress bodies of ~990,000 small numbers in a
  field condense keeps but does not count (the costliest values per byte),
  waiting on a stalled upstream summarizer;
- messages16: 16 concurrent /v1/compress bodies of 10,000 short messages
  (the message limit), waiting on the stalled summarizer too.

The stub also serves the summarizer (`CONDENSE_UPSTREAM_URL`); outside the
stalled cases it answers at once (an empty choice: the heuristic stands in).

The server's RSS is sampled from /proc/<pid>/status (VmRSS every 10 ms, and
VmHWM, reset before each case through /proc/<pid>/clear_refs). "after" is
VmRSS 3 s after the last answer. The table compares the peak with the memory
limit of deploy/deployment.yaml. MB are 10^6 bytes; MiB 2^20.
"""

import argparse
import json
import re
import socket
import sys
import threading
import time
from pathlib import Path

import common

MIB = 1 << 20
MAX_JSON_NODES = 100_000  # src/thread/limits.rs


def worst_body(target_bytes, cjk, model=True):
    """One message of MAX_JSON_NODES - 4 text parts, about `target_bytes` long."""
    parts = MAX_JSON_NODES - 4
    filler = "文" if cjk else "w"

    def make(chars, longer=0):
        content = []
        for i in range(parts):
            text = f"{i} "
            need = max(0, chars + (i < longer) - len(text))
            text += (filler * 5 + " ") * (need // 6) + filler * (need % 6)
            content.append({"type": "text", "text": text})
        body = {"messages": [{"role": "user", "content": content}]}
        if model:
            body["model"] = "gpt-4o"
        return json.dumps(body, ensure_ascii=False).encode()

    # Linear in the text's length once it is longer than the index prefix.
    lo, hi = 8, 8
    while len(make(hi)) < target_bytes:
        lo, hi = hi, hi * 2
    while hi - lo > 1:  # the longest text that keeps the body under the target
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if len(make(mid)) <= target_bytes else (lo, mid)
    # The first parts one character longer, to come closer to the target.
    step = 3 if cjk else 1
    return make(lo, (target_bytes - len(make(lo))) // step * 5 // 6)


def scalar_body(nonce, numbers=990_000):
    """A thread whose one kept-but-uncounted field holds `numbers` numbers;
    `nonce` makes its span its own (no single flight between requests)."""
    digits = ",".join("7" for _ in range(numbers))
    roles = ("user", "assistant")
    messages = [{"role": roles[i % 2], "content": f"{nonce} turn {i}: what next?"} for i in range(41)]
    messages[0]["metadata"] = "@NUMBERS@"
    body = {"messages": messages, "model": "gpt-4o", "force": True, "summarizer": {"strategy": "llm"}}
    return json.dumps(body).replace('"@NUMBERS@"', f"[{digits}]").encode()


def text_body(nonce, n=39, chars=100_000):
    """`n` long messages of plain text: the cheapest shape, bytes alone."""
    roles = ("user", "assistant")
    words = (f"word{nonce} " * (chars // 6))[:chars]
    messages = [{"role": roles[i % 2], "content": f"{i} {words}"} for i in range(n)]
    body = {"messages": messages, "model": "gpt-4o", "force": True, "summarizer": {"strategy": "llm"}}
    return json.dumps(body).encode()


def messages_body(nonce, n=10_000):
    """`n` short messages, alternating user and assistant."""
    roles = ("user", "assistant")
    messages = [{"role": roles[i % 2], "content": f"{nonce}m{i}"} for i in range(n - 1)]
    messages.append({"role": "user", "content": "go on"})
    body = {"messages": messages, "model": "gpt-4o", "force": True, "summarizer": {"strategy": "llm"}}
    return json.dumps(body).encode()


# ---------------------------------------------------------------- stub provider


class Stall:
    """The stub provider's state: requests received, and the gate they wait at."""

    def __init__(self):
        self.received = 0
        self.lock = threading.Lock()
        self.release = threading.Event()


def stub_handler(stall):
    class Handler(common.QuietHandler):
        def do_POST(self):
            n = int(self.headers.get("content-length") or 0)
            remaining = n
            while remaining > 0:  # read and drop: the stub holds nothing
                chunk = self.rfile.read(min(remaining, 1 << 20))
                if not chunk:
                    return
                remaining -= len(chunk)
            with stall.lock:
                stall.received += 1
            stall.release.wait(600)
            self.send_json(b'{"id":"x","object":"chat.completion","choices":[]}')

    return Handler


# ------------------------------------------------------------------- sampling


def status(pid):
    """VmRSS and VmHWM in bytes."""
    kb = common.status_kb(pid)
    return {k: kb[k] * 1024 for k in ("VmRSS", "VmHWM")}


class Sampler(threading.Thread):
    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid, self.peak, self.stop = pid, 0, threading.Event()

    def run(self):
        while not self.stop.is_set():
            self.peak = max(self.peak, status(self.pid)["VmRSS"])
            time.sleep(0.01)


def reset_hwm(pid):
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
    except OSError:
        pass


# -------------------------------------------------------------------- clients


def read_response(sock, buf=b""):
    """(status, rest of the buffer) of one response with a Content-Length body."""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed before a response")
        buf += chunk
    head, _, rest = buf.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    m = re.search(rb"(?i)content-length:\s*(\d+)", head)
    length = int(m.group(1)) if m else 0
    while len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        rest += chunk
    return status, rest[length:]


def post(port, path, body, headers, out, i):
    """Sends the head with `Expect: 100-continue`, as a careful client of a
    large upload does: the body goes only after `100 Continue`, so a refusal
    from the head (503, 413) is read rather than cut off mid-upload."""
    try:
        sock = socket.create_connection(("127.0.0.1", port), timeout=900)
        head = f"POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Length: {len(body)}\r\nExpect: 100-continue\r\n"
        head += "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
        sock.sendall(head.encode())
        status, rest = read_response(sock)
        if status == 100:
            sock.sendall(body)
            status, _ = read_response(sock, rest)
        out[i] = status
        sock.close()
    except Exception as e:  # a reset connection counts as such
        out[i] = type(e).__name__


def run_case(port, pid, stall, path, body, n, hold, waves=1):
    """n concurrent posts, `waves` times; with `hold`, the provider stalls
    until all of a wave were received or refused."""
    reset_hwm(pid)
    sampler = Sampler(pid)
    sampler.start()
    codes = {}
    for _ in range(waves):
        for s in run_wave(port, stall, path, body, n, hold):
            codes[s] = codes.get(s, 0) + 1
    time.sleep(3.0)
    sampler.stop.set()
    sampler.join()
    peak = max(sampler.peak, status(pid)["VmHWM"])
    after = status(pid)["VmRSS"]
    return peak, after, codes


def run_wave(port, stall, path, body, n, hold):
    headers = {"content-type": "application/json", "authorization": "Bearer sk-test"}
    stall.release.clear()
    if not hold:
        stall.release.set()
    with stall.lock:
        stall.received = 0
    out = [None] * n
    bodies = [body(i) if callable(body) else body for i in range(n)]
    threads = [threading.Thread(target=post, args=(port, path, bodies[i], headers, out, i)) for i in range(n)]
    started = time.time()
    for t in threads:
        t.start()
    if hold:
        # Everyone is either at the provider or answered (a 503, a 413):
        # then the peak of holding them all is reached; let them go.
        while time.time() - started < 600:
            answered = sum(1 for s in out if s is not None)
            if stall.received + answered >= n:
                print(f"  ({stall.received} at the provider, {answered} answered)", file=sys.stderr)
                break
            time.sleep(0.05)
        time.sleep(1.0)
        stall.release.set()
    for t in threads:
        t.join()
    return out


# ----------------------------------------------------------------------- main


def manifest_limit():
    text = (common.ROOT / "deploy" / "deployment.yaml").read_text()
    m = re.search(r"limits:\s*\n(?:\s+cpu:.*\n)?(?:\s*#.*\n)*\s+memory:\s*(\d+)(Mi|Gi)", text)
    if not m:
        return None
    return int(m.group(1)) * (MIB if m.group(2) == "Mi" else 1024 * MIB)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--condense", default=str(common.BINARY))
    ap.add_argument("--cases", default="compress,proxy16,proxy100")
    ap.add_argument("--env", action="append", default=[], help="K=V for condense's environment")
    args = ap.parse_args()
    if not args.no_build:
        common.build()

    stall = Stall()
    stub = common.serve(stub_handler(stall))
    stub_url = f"http://127.0.0.1:{stub.server_address[1]}/v1"
    env = {"CONDENSE_DATABASE_URL": "off", "CONDENSE_PROXY_OPENAI_URL": stub_url,
           "CONDENSE_UPSTREAM_URL": stub_url, "CONDENSE_UPSTREAM_MODEL": "stub",
           "CONDENSE_UPSTREAM_MAX_CONCURRENCY": "64"}
    env.update(kv.split("=", 1) for kv in args.env)
    server = common.Condense(args.condense, env, ready="/readyz")
    port = server.port
    try:
        time.sleep(1.0)
        idle = status(server.pid)["VmRSS"]
        limit = manifest_limit()
        compress_body = worst_body(6_500_000, cjk=False)
        proxy_body = worst_body(7_900_000, cjk=True)
        proxy3 = worst_body(3_000_000, cjk=False)
        cases = {
            # One alone: a request's own cost, peak minus idle.
            "compress1": ("/v1/compress", compress_body, 1, False),
            "scalars1": ("/v1/compress", scalar_body, 1, True),
            "messages1": ("/v1/compress", messages_body, 1, True),
            "text1": ("/v1/compress", text_body, 1, True),
            "proxy1": ("/v1/chat/completions", proxy_body, 1, True),
            "compress": ("/v1/compress", compress_body, 16, False),
            "proxy16": ("/v1/chat/completions", proxy_body, 16, True),
            "proxy100": ("/v1/chat/completions", proxy_body, 100, True),
            # More than the places: most go through unchanged, each freeing
            # less than a large request; what they leave behind ("after").
            "proxy64": ("/v1/chat/completions", worst_body(3_900_000, cjk=True), 64, True),
            "proxy8": ("/v1/chat/completions", proxy3, 8, True),
            "proxy8x3": ("/v1/chat/completions", proxy3, 8, True, 3),
            "scalars16": ("/v1/compress", scalar_body, 16, True),
            "messages16": ("/v1/compress", messages_body, 16, True),
            "text16": ("/v1/compress", text_body, 16, True),
        }
        print(f"idle RSS {idle / MIB:.0f} MiB; manifest limit {limit / MIB:.0f} MiB"
              + (f"; env {' '.join(args.env)}" if args.env else ""))
        print("| case | body | n | peak RSS | after | answers | peak ≤ limit |")
        print("|---|---|---|---|---|---|---|")
        for name in args.cases.split(","):
            path, body, n, hold, *waves = cases[name]
            peak, after, codes = run_case(port, server.pid, stall, path, body, n, hold, *waves)
            answers = ", ".join(f"{k}: {v}" for k, v in sorted(codes.items(), key=str))
            ok = "yes" if limit is None or peak <= limit else "**no**"
            n = f"{waves[0]} × {n}" if waves else n
            size = len(body(0) if callable(body) else body)
            print(f"| {name} | {size / 1e6:.1f} MB | {n} | {peak / MIB:.0f} MiB | {after / MIB:.0f} MiB "
                  f"| {answers} | {ok} |", flush=True)
    finally:
        stall.release.set()
        server.stop()
        stub.shutdown()


if __name__ == "__main__":
    sys.exit(main())
