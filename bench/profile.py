#!/usr/bin/env python3
"""Where a request spends its instructions, by callgrind.

    bench/profile.py [--case tokens-cold|compress-hit] [--binary target/release/condense] [--requests 5] [--top 12]

Runs condense under `valgrind --tool=callgrind` (instructions, not seconds:
the same on a busy machine), sends N cold requests (large-04 with a fresh
nonce in every message, as bench/peers.py's cold scenario), stops it, and
prints two tables per request: condense's stages by inclusive instructions
(body to request type, thread model, counting and the BPE within it, the
answer), and the functions with the most instructions of their own. Start-up is left out: the
counters start at zero when the first request arrives (callgrind_control -z).
Needs valgrind (Debian's `valgrind`).
"""

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import common
import peers

# condense's own stages of a /v1/tokens request, by inclusive instructions
# (a function and all it calls); the names hold in older builds too.
STAGES = [
    ("JSON body -> request type", r"^condense::http::extract::parse(_borrowed)?$|^serde_json::de::from_slice|"
                                  r"^serde_path_to_error::de::deserialize"),
    # A local /v1/tokens count outlines the thread (messages seen before from
    # the memo) and counts the outline; the other routes parse and count it whole.
    ("request -> thread model", r"condense::thread::parse(_owned)?$|condense::thread::parse::outline$"),
    ("counting (memo, pieces, BPE)", r"condense::tokens::count::Counter::(thread|outlined)$"),
    ("  of which the message memo's hash", r"condense::tokens::memo::Memo::key"),
    ("compression (plan, span key, summary, fit)", r"^condense::compress::service::Compressor::run"),
    ("  of which the canonical span and its SHA-256", r"^condense::summarize::canonical::"),
    ("  of which the cache lookup", r"^condense::cache::"),
    ("answer -> JSON", r"(Tokens|Compress)Response>::serialize"),
    ("dropping the thread", r"drop_in_place<condense::thread::Thread>"),
]
LINE = re.compile(r"^\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(?:.*?\.(?:rs|c|h|S)|\?\?\?|[^:\s]*):(.*?)(?: \[.*\])?$")


def annotate(path, inclusive):
    out = subprocess.run(["callgrind_annotate", "--auto=no", f"--inclusive={'yes' if inclusive else 'no'}",
                          "--threshold=100", str(path)], capture_output=True, text=True, check=True).stdout
    total = int(re.search(r"([\d,]+) \(100.0%\)\s+PROGRAM TOTALS", out).group(1).replace(",", ""))
    costs = {}
    for line in out.splitlines():
        m = LINE.match(line)
        if m and "PROGRAM TOTALS" not in line:
            # The same function appears once per source file its inlined code came from.
            name = m.group(2).strip()
            n = int(m.group(1).replace(",", ""))
            costs[name] = max(costs.get(name, 0), n) if inclusive else costs.get(name, 0) + n
    return total, costs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", default=str(common.BINARY))
    ap.add_argument("--requests", type=int, default=5)
    ap.add_argument("--top", type=int, default=12)
    ap.add_argument("--case", choices=["tokens-cold", "compress-hit"], default="tokens-cold",
                    help="cold /v1/tokens requests, or /v1/compress (heuristic) answered from the cache")
    ap.add_argument("--from", dest="saved", help="report on a saved callgrind.out instead of running")
    args = ap.parse_args()
    if args.saved:
        return report(Path(args.saved), args)
    work = Path(tempfile.mkdtemp(prefix="condense-profile-"))
    mode, path = peers.bodies(work)["cold"]
    pieces = path.read_bytes().split(peers.NONCE.encode())
    route = "/v1/tokens"
    if args.case == "compress-hit":
        # One body, sent once before the counters start: every measured request is a cache hit.
        thread = common.load_thread("large-04.openai")
        pieces = [json.dumps({"model": "gpt-4o", "messages": thread["messages"], "force": True,
                              "summarizer": {"strategy": "heuristic"}}).encode()]
        route = "/v1/compress"
    out = work / "callgrind.out"
    env = {"CONDENSE_REQUEST_TIMEOUT": "600",
           "CONDENSE_DATABASE_URL": "off" if args.case == "tokens-cold" else f"sqlite://{work}/cache.db?mode=rwc"}
    server = common.Condense(args.binary, env, what="condense under callgrind", clean=False, timeout=600,
                             wrap=["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"])
    try:
        def send(i):
            body = f"profile-{i} ".encode().join(pieces)
            req = urllib.request.Request(f"{server.base}{route}", data=body,
                                         headers={"content-type": "application/json"})
            with urllib.request.urlopen(req, timeout=600) as res:
                return json.loads(res.read())
        if args.case == "compress-hit":
            send(0)
        subprocess.run(["callgrind_control", "-z", str(server.pid)], check=True, capture_output=True)
        for i in range(args.requests):
            answer = send(i)
            if args.case == "compress-hit" and not answer["summary"]["cached"]:
                sys.exit("a measured compression was not a cache hit")
    finally:
        server.stop(timeout=120)  # callgrind writes its output on the way out
    time.sleep(0.5)
    files = sorted(work.glob("callgrind.out*"), key=lambda f: f.stat().st_size)
    print(f"callgrind output: {files[-1]}")
    report(files[-1], args)


def report(path, args):
    total, inclusive = annotate(path, True)
    _, self_costs = annotate(path, False)
    per = args.requests
    print(f"{per} requests ({args.case}, large-04, 560 KB), {total / per / 1e6:.0f} M instructions per request\n")
    print("| stage (inclusive) | M instr. per request | share |\n|---|---|---|")
    for label, pattern in STAGES:
        n = sum(v for k, v in inclusive.items() if re.search(pattern, k))
        print(f"| {label} | {n / per / 1e6:.1f} | {100 * n / total:.1f} % |")
    print("\n| function (self) | M instr. per request | share |\n|---|---|---|")
    # tokio's frames carry the inlined body of the blocking task (the JSON parse).
    # Under valgrind, sha2 finds no SHA-NI and hashes in software (~57 instructions a byte).
    # Thread entry frames (clone, start_thread, ...) are listed with everything below them.
    frames = ("clone", "start_thread", "<std::sys::thread", "core::ops::function::FnOnce::call_once{{vtable",
              "std::sys::backtrace::__rust_begin_short_backtrace")
    own = {k: v for k, v in self_costs.items() if not k.startswith(("tokio::", "<tokio::") + frames)}
    for name, n in sorted(own.items(), key=lambda kv: -kv[1])[: args.top]:
        print(f"| `{name[:100]}` | {n / per / 1e6:.1f} | {100 * n / total:.1f} % |")


if __name__ == "__main__":
    main()
