#!/usr/bin/env python3
"""Answer survival on long conversations between two people (issue 36),
through `/v1/compress`, against a release build.

    bench/people.py [--no-build] [--condense target/release/condense]

The conversations are the ones `cargo test --test suite recall::answers`
measures (tests/suite/recall/people.rs: about 540 messages in 20 dated
sessions, facts each speaker states about their own life, some replaced
later, each with a question whose answer is a short exact string); the
script has the test binary write them (`write_people_conversations`, an
ignored test) and sends each with `force`, the newest 10% of its messages
kept (`min_recent_messages`), as `truncate` (the span dropped) and as
`heuristic` at a 500- and a 2,000-token `max_summary_tokens`. An answer
counts as kept when the compressed thread's text says it; only questions
whose every mention lies in the span are asked. It prints one row a
conversation and the totals: uncompressed (the ceiling), truncation,
heuristic at 500 and at 2,000 tokens. No assertion: the test asserts.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request

import common


def post(base, path, body, timeout=600):
    req = urllib.request.Request(base + path, data=json.dumps(body).encode(),
                                 headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as res:
            return json.loads(res.read())
    except urllib.error.HTTPError as e:
        sys.exit(f"{path}: {e.code} {e.read().decode()[:300]}")


def text(messages):
    """Every text a thread says (string contents and text blocks)."""
    out = []
    for m in messages:
        c = m.get("content")
        if isinstance(c, str):
            out.append(c)
        elif isinstance(c, list):
            out.extend(b.get("text", "") for b in c if isinstance(b, dict))
    return "\n".join(out)


def conversations(folder):
    """The test binary writes the conversations into `folder`."""
    env = dict(os.environ, PEOPLE_OUT=folder)
    subprocess.check_call(["cargo", "test", "--quiet", "--test", "suite", "recall::answers::write_people_conversations",
                           "--", "--ignored", "--exact"], cwd=common.ROOT, env=env, stdout=subprocess.DEVNULL)
    names = sorted(n for n in os.listdir(folder) if n.endswith(".json"))
    return [(n[:-5], json.loads(open(os.path.join(folder, n)).read())) for n in names]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--condense", default=str(common.BINARY))
    args = ap.parse_args()
    if not args.no_build:
        common.build()
    with tempfile.TemporaryDirectory() as folder:
        convs = conversations(folder)
    server = common.Condense(args.condense, {"CONDENSE_MAX_CONCURRENCY": "0"}, ["--database-url", "off"], clean=False)
    columns = ["uncompressed", "truncation", "heuristic, 500", "heuristic, 2,000"]
    totals = {c: [0, 0] for c in columns}
    try:
        print("| conversation | messages | questions | " + " | ".join(columns) + " |")
        print("|---|---|---|" + "---|" * len(columns))
        for name, conv in convs:
            messages = conv["messages"]
            keep = len(messages) - len(messages) * 9 // 10
            cut = len(messages) - keep
            asked = [q["answer"] for q in conv["questions"] if all(i < cut for i in q["evidence"])]
            threads = {"uncompressed": text(messages)}
            for column, strategy, limit in [("truncation", "truncate", 2000), ("heuristic, 500", "heuristic", 500),
                                            ("heuristic, 2,000", "heuristic", 2000)]:
                r = post(server.base, "/v1/compress", {
                    "messages": messages, "force": True, "summarizer": {"strategy": strategy},
                    "config": {"max_summary_tokens": limit, "min_recent_messages": keep}})
                threads[column] = text(r["messages"])
            cells = []
            for column in columns:
                kept = sum(a in threads[column] for a in asked)
                totals[column][0] += kept
                totals[column][1] += len(asked)
                cells.append(f"{kept / max(len(asked), 1):.1%} ({kept}/{len(asked)})")
            print(f"| {name} | {len(messages)} | {len(asked)} | " + " | ".join(cells) + " |", flush=True)
        cells = [f"{k / max(n, 1):.1%} ({k}/{n})" for k, n in totals.values()]
        print(f"| **all** | | {totals['uncompressed'][1]} | " + " | ".join(cells) + " |")
        ceiling = totals["uncompressed"][0] / max(totals["uncompressed"][1], 1)
        default = totals["heuristic, 2,000"][0] / max(totals["heuristic, 2,000"][1], 1)
        print(f"\nheuristic at 2,000 tokens: {default / max(ceiling, 1e-9):.1%} of the ceiling")
    finally:
        server.stop()


if __name__ == "__main__":
    sys.exit(main())
