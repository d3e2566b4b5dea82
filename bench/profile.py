#!/usr/bin/env python3
"""Where a cold /v1/tokens request spends its instructions, by callgrind.

    bench/profile.py [--binary target/release/condense] [--requests 5] [--top 15]

Runs condense under `valgrind --tool=callgrind` (instructions, not seconds:
the same on a busy machine), sends N cold requests (large-04 with a fresh
nonce in every message, as bench/peers.py's cold scenario), stops it, and
prints the functions with the most instructions of their own, grouped into
the stages of the path (JSON parse, copies and allocation, pre-split regex,
BPE, hashing, other) with each stage's share. Start-up is left out: the
counters start at zero when the first request arrives (callgrind_control -z).
Needs valgrind (Debian's `valgrind`).
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import peers  # noqa: E402

STAGES = [
    ("JSON parse", re.compile(r"serde_json|serde::de|serde_path_to_error|IgnoredAny|indexmap")),
    ("pre-split regex", re.compile(r"regex_automata|regex::|Pretokenizer|aho_corasick")),
    ("BPE", re.compile(r"\bbpe::|bpe_openai|BacktrackEncoder|BytePairEncoding|tiktoken")),
    ("copies and allocation", re.compile(r"memcpy|memmove|malloc|free|realloc|_int_|alloc::|drop_in_place|Clone")),
    ("hashing", re.compile(r"sip|hash|Hash|sha2")),
]


def stage(name):
    for label, pattern in STAGES:
        if pattern.search(name):
            return label
    return "other"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", default=str(peers.TARGET / "release" / "condense"))
    ap.add_argument("--requests", type=int, default=5)
    ap.add_argument("--top", type=int, default=15)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="condense-profile-"))
    mode, path = peers.bodies(work)["cold"]
    pieces = path.read_bytes().split(peers.NONCE.encode())
    port = peers.free_port()
    out = work / "callgrind.out"
    env = dict(os.environ, RUST_LOG="warn", CONDENSE_DATABASE_URL="off", CONDENSE_LISTEN=f"127.0.0.1:{port}",
               CONDENSE_REQUEST_TIMEOUT="600")
    proc = subprocess.Popen(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", args.binary],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        peers.wait_ready(f"http://127.0.0.1:{port}/healthz", proc, "condense under callgrind", timeout=600)
        subprocess.run(["callgrind_control", "-z", str(proc.pid)], check=True, capture_output=True)
        for i in range(args.requests):
            body = f"profile-{i} ".encode().join(pieces)
            req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/tokens", data=body,
                                         headers={"content-type": "application/json"})
            with urllib.request.urlopen(req, timeout=600) as res:
                json.loads(res.read())
    finally:
        proc.terminate()
        proc.wait(timeout=120)
    time.sleep(0.5)
    files = sorted(work.glob("callgrind.out*"), key=lambda f: f.stat().st_size)
    report = subprocess.run(["callgrind_annotate", "--threshold=100", str(files[-1])],
                            capture_output=True, text=True, check=True).stdout
    rows = []
    for line in report.splitlines():
        m = re.match(r"^\s*([\d,]+)\s+\(\s*([\d.]+)%\)\s+(.*)$", line)
        if m and "PROGRAM TOTALS" not in line and "file:function" not in line:
            rows.append((int(m.group(1).replace(",", "")), m.group(3)))
    total = sum(n for n, _ in rows)
    shares = {}
    for n, name in rows:
        shares[stage(name)] = shares.get(stage(name), 0) + n
    print(f"{args.requests} cold /v1/tokens requests (large-04), {total / 1e9:.2f} G instructions, "
          f"{total / args.requests / 1e6:.0f} M per request\n")
    print("| stage | share |\n|---|---|")
    for label, n in sorted(shares.items(), key=lambda kv: -kv[1]):
        print(f"| {label} | {100 * n / total:.1f} % |")
    print("\n| self instructions | share | function |\n|---|---|---|")
    for n, name in sorted(rows, reverse=True)[: args.top]:
        short = re.sub(r"^.*?:", "", name, count=1) if ":" in name.split(" ")[0] else name
        print(f"| {n / 1e6:.0f} M | {100 * n / total:.1f} % | `{short[:110]}` |")


if __name__ == "__main__":
    main()
