#!/usr/bin/env python3
"""Time of each hostile-but-legal input at 1 MB and 8 MB, against a release build.

    bench/hostile.py [--no-build] [--condense target/release/condense]

Each case is one request (after one warm-up request of another size), timed
end to end on loopback; the server runs with no cache, a 600 s request
limit so that a slow case shows its time instead of a 503, and no message
limit (the node limit still bounds a body). Linear work means
the 3 MB time is about 3 times the 1 MB time. A body of more than 100,000 JSON
objects and arrays is refused (413) before it is parsed: that is what bounds
the many-small-parts cases at 8 MB. Prints one table.
"""

import argparse
import json
import random
import sys
import time
import urllib.error
import urllib.request

import common

MB = 1_000_000


def sized(make, target):
    """make(n) for the n whose JSON body is about `target` bytes."""
    n = 64
    while len(json.dumps(make(n))) < target:
        n *= 2
    lo, hi = n // 2, n
    while hi - lo > max(1, lo // 100):
        mid = (lo + hi) // 2
        if len(json.dumps(make(mid))) < target:
            lo = mid
        else:
            hi = mid
    return make(lo)


def dashes(n):
    return {"messages": [{"role": "user", "content": "-" * n}]}


def unicode_text(n):
    rng = random.Random(7)
    alphabet = [chr(c) for c in list(range(0x20, 0x7f)) + list(range(0xa0, 0x2fff)) + list(range(0x4e00, 0x4fff))]
    text = "".join(rng.choice(alphabet) for _ in range(n // 2))
    return {"messages": [{"role": "user", "content": text}]}


def tiny_messages(n):
    return {"messages": [{"role": "user" if i % 2 == 0 else "assistant", "content": "a"} for i in range(n)]}


def tool_calls(n):
    calls = [{"id": f"c{i}", "type": "function", "function": {"name": "f", "arguments": "{}"}} for i in range(n)]
    results = [{"role": "tool", "tool_call_id": f"c{i}", "content": "ok"} for i in reversed(range(n))]
    return {"messages": [{"role": "user", "content": "go"}, {"role": "assistant", "content": None, "tool_calls": calls}] + results}


def failing_units(n):
    """n tool units with distinct tools, commands and paths that all fail: the heuristic's worst case."""
    msgs = [{"role": "user", "content": "fix it"}]
    for i in range(n):
        msgs.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{i}", "type": "function",
             "function": {"name": f"tool_{i}", "arguments": json.dumps({"command": f"make t{i}", "path": f"src/m{i}.rs"})}}]})
        msgs.append({"role": "tool", "tool_call_id": f"c{i}", "content": f"error: E{i} in src/m{i}.rs\nexit status 2"})
    msgs.append({"role": "user", "content": "and now?"})
    return {"messages": msgs, "force": True, "summarizer": {"strategy": "heuristic"}}


def long_tail(n):
    """A kept tail far over a small window: fitting must drop units one by one."""
    body = failing_units(n)
    body["config"] = {"context_window": 4096, "response_reserve": 512, "min_recent_messages": 2}
    return body


def iterations(n):
    """n agent iterations, all summarized per iteration (group_by) and the
    kept ones fitted: over the message limit, which this server lifts."""
    msgs = [{"role": "system", "content": "You are an agent."}]
    for i in range(n):
        msgs.append({"role": "user", "content": f"Iteration {i}: please fix bug #{i} in src/file{i}.rs"})
        msgs.append({"role": "assistant", "content": None, "tool_calls": [{"id": f"c{i}", "type": "function",
                     "function": {"name": "bash", "arguments": json.dumps({"cmd": f"cargo test t{i}"})}}]})
        msgs.append({"role": "tool", "tool_call_id": f"c{i}", "content": f"error: test t{i} failed at line {i}"})
        msgs.append({"role": "assistant", "content": f"Fixed bug {i} by editing src/file{i}.rs."})
    return {"messages": msgs, "group_by": "iteration", "force": True, "summarizer": {"strategy": "heuristic"}}


CASES = [
    ("one run of `-` (tokens)", "/v1/tokens", dashes),
    ("random Unicode (tokens)", "/v1/tokens", unicode_text),
    ("tiny messages (tokens)", "/v1/tokens", tiny_messages),
    ("tool calls in one message, answered in reverse (tokens)", "/v1/tokens", tool_calls),
    ("distinct failing tool units (compress, heuristic)", "/v1/compress", failing_units),
    ("a tail far over the window (compress, fitting)", "/v1/compress", long_tail),
    ("iterations past the message limit (compress, group_by)", "/v1/compress", iterations),
]


def post(base, path, body):
    data = json.dumps(body).encode()
    req = urllib.request.Request(base + path, data=data, headers={"content-type": "application/json"})
    start = time.perf_counter()
    try:
        with urllib.request.urlopen(req, timeout=900) as res:
            res.read()
            status = res.status
    except urllib.error.HTTPError as e:
        e.read()
        status = e.code
    return time.perf_counter() - start, status, len(data)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--condense", default=str(common.BINARY))
    args = ap.parse_args()
    if not args.no_build:
        common.build()
    server = common.Condense(args.condense, args=["--database-url", "off", "--request-timeout", "600",
                                                  "--max-messages", "0"], clean=False)
    base = server.base
    try:
        print("| input | 1 MB | 3 MB | 8 MB | 3 MB / 1 MB |")
        print("|---|---|---|---|---|")
        for name, path, make in CASES:
            times = []
            for size in (1 * MB, 3 * MB, 8 * MB - 200_000):
                body = sized(make, size)
                post(base, path, sized(make, 100_000))  # warm-up
                took, status, n = post(base, path, body)
                times.append((took, status, n))
            cells = [f"{t:.2f} s ({n / MB:.1f} MB, {s})" for t, s, n in times]
            print(f"| {name} | {cells[0]} | {cells[1]} | {cells[2]} | {times[1][0] / max(times[0][0], 1e-9):.1f}x |",
                  flush=True)
    finally:
        server.stop()


if __name__ == "__main__":
    sys.exit(main())
