#!/usr/bin/env python3
"""Anchor recall of every summarizer on the fixture threads, before and after
the fidelity receipt's repair, against a release build.

    bench/fidelity.py [--no-build] [--condense target/release/condense]
                      [--llm http://127.0.0.1:8089/v1] [--limit 2000]

Each fixture thread in data/threads is compressed with `force`
(the newest `min_recent_messages` kept, the rest summarized) by each
strategy: `heuristic`, and with `--llm` (an OpenAI-compatible server, such
as scripts/local-llm.sh's) `llm` and `hybrid`; and per iteration
(`group_by: "iteration"`, an iteration opening at each user message, the
newest two kept). From the answer's `summary.fidelity` it prints, per
strategy and thread: the anchors checked, the share the summary held as
written (before the repair) and with the `### Also in the span` list
(after), and the tokens that list took. No assertion: the tests assert.
"""

import argparse
import json
import re
import sys
import urllib.error
import urllib.request

import common

THREADS = sorted(p for p in common.THREADS.glob("*.json") if ".facts." not in p.name)
ALSO = "### Also in the span"
MENTIONED = r"Also mentioned: .*?(?:\.(?= \[\d+\] )|$)"


def post(base, path, body, timeout=1800):
    req = urllib.request.Request(base + path, data=json.dumps(body).encode(),
                                 headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as res:
            return json.loads(res.read())
    except urllib.error.HTTPError as e:
        return {"error": e.code, "detail": e.read().decode()[:200]}


def opens(m):
    """A user message opens an iteration; an Anthropic one that only carries
    tool results answers the agent's calls and belongs to its iteration."""
    if m.get("role") != "user":
        return False
    c = m.get("content")
    return not (isinstance(c, list) and c and all(b.get("type") == "tool_result" for b in c))


def tagged(messages):
    """An iteration opens at each user request (after the system prompt)."""
    out, it = [], 0
    for m in messages:
        m = dict(m)
        if opens(m):
            it += 1
        if m.get("role") != "system":
            m["metadata"] = {"iteration": max(it, 1)}
        out.append(m)
    return out


def repair_tokens(base, content):
    """Tokens of the repair: the `### Also in the span` list, or a
    per-iteration injection's `Also mentioned: …` sentences (to the end of
    their entry, or of their fragment in the rolling entry)."""
    if ALSO in content:
        section = content[content.index(ALSO):]
    else:
        section = " ".join(re.findall(MENTIONED, content, flags=re.M))
    if not section:
        return 0
    return post(base, "/v1/tokens", {"text": section}).get("total_tokens", 0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--condense", default=str(common.BINARY))
    ap.add_argument("--llm", help="OpenAI-compatible base URL for llm and hybrid")
    ap.add_argument("--llm-window", type=int, default=8192, help="the --llm model's context window")
    ap.add_argument("--limit", type=int, default=2000, help="max_summary_tokens")
    ap.add_argument("--strategies", help="comma-separated subset (heuristic,per-iteration,llm,hybrid)")
    ap.add_argument("--threads", help="comma-separated thread names (small-00.openai,...): the tiny "
                    "model takes minutes per summary, tens of minutes on large-04")
    args = ap.parse_args()
    if not args.no_build:
        common.build()
    flags = ["--database-url", "off", "--request-timeout", "31m"]
    if args.llm:
        # The local model's window is 8,192 tokens: condense chunks to it.
        # A tiny model on shared cores is slow: minutes per summary, not
        # the default 60 s per call and 90 s in all.
        flags += ["--upstream-url", args.llm, "--upstream-model", "local", "--upstream-timeout", "30m",
                  "--upstream-retry-budget", "30m", "--upstream-context-window", str(args.llm_window)]
    server = common.Condense(args.condense, {"CONDENSE_MAX_CONCURRENCY": "0"}, flags, clean=False)
    base = server.base
    try:
        strategies = ["heuristic", "per-iteration"] + (["llm", "hybrid"] if args.llm else [])
        if args.strategies:
            strategies = [s for s in strategies if s in args.strategies.split(",")]
        threads = [p for p in THREADS if not args.threads or p.stem in args.threads.split(",")]
        print(f"max_summary_tokens {args.limit}")
        print("| strategy | thread | anchors | before | after | repair tokens |")
        print("|---|---|---|---|---|---|")
        totals = {}
        for strategy in strategies:
            for path in threads:
                thread = json.loads(path.read_text())
                body = {k: v for k, v in thread.items() if k in ("messages", "system", "tools")}
                body.update({"force": True, "config": {"max_summary_tokens": args.limit,
                                                       "llm_min_tokens": 0, "llm_min_total_tokens": 0,
                                                       # An upstream failure is a row of its own,
                                                       # not the heuristic's figures under llm's name.
                                                       "on_upstream_error": "fail"}})
                if strategy == "per-iteration":
                    body["messages"] = tagged(body["messages"])
                    body.update({"group_by": "iteration", "keep_recent_iterations": 2,
                                 "summarizer": {"strategy": "heuristic"}})
                else:
                    body["summarizer"] = {"strategy": strategy}
                r = post(base, "/v1/compress", body)
                f = (r.get("summary") or {}).get("fidelity")
                if not f:
                    print(f"| {strategy} | {path.stem} | - | - | - | {r.get('error', 'no summary')} |", flush=True)
                    continue
                n = max(f["anchors"], 1)
                before, after = f["kept"] / n, (f["kept"] + f["added"]) / n
                tokens = repair_tokens(base, r["summary"].get("content", ""))
                t = totals.setdefault(strategy, [0, 0, 0, 0])
                t[0] += f["anchors"]; t[1] += f["kept"]; t[2] += f["kept"] + f["added"]; t[3] += tokens
                print(f"| {strategy} | {path.stem} | {f['anchors']} | {before:.1%} | {after:.1%} | {tokens} |",
                      flush=True)
        print()
        print("| strategy | anchors | before | after | repair tokens (all threads) |")
        print("|---|---|---|---|---|")
        for s, (a, k, ka, tok) in totals.items():
            print(f"| {s} | {a} | {k / max(a, 1):.1%} | {ka / max(a, 1):.1%} | {tok} |")
    finally:
        server.stop()


if __name__ == "__main__":
    sys.exit(main())
