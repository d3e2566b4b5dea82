#!/usr/bin/env python3
"""What the turn on which a summary falls due adds, with precompute and without.

    python3 bench/due_turn.py [-n 10] [--llm http://127.0.0.1:8089/v1]
                              [--bin target/release/condense] [--no-build] [--json FILE]

Stdlib only (with bench/common.py and bench/proxy_latency.py's stub). It
builds the release binary (unless --no-build) and starts, in a temporary
directory:

* the **stub provider** of bench/proxy_latency.py (answers at once, so the
  provider's own time is ~0);
* two **condense** instances proxying to it, each with its own SQLite cache
  and the real local LLM (`--llm`, the llama-server of
  scripts/local-llm.sh) as summarizer: `on` (profile N = 12 messages, 4
  recent kept, any span worth the LLM, `precompute_at` 0.8, the default)
  and `off` (the same with `precompute_at = 0`).

Each of n agent sessions (a distinct coding thread per session and
instance) sends its whole history every turn, through the OpenAI route,
one user and one assistant message a turn. With N = 12, turn 5 (11
messages since the pinned system prompt) crosses 0.8 and starts the
summary in the background (`on`); turn 6 (13) is due. Between turns the
agent "thinks": the script waits until condense's background summaries
have ended (`/metrics`), as an agent's own LLM call would take longer than
the summary. Rows, per instance, p50 and p99 over the sessions:

* `plain`: a turn with nothing due (turn 4), the baseline;
* `due`: the due turn (`on`: the summary written ahead is swapped in, every
  response must say `x-condense-precompute: used`; `off`: the summary is
  written on the turn, by the LLM);
* `reuse`: the turn after (the cached summary continued);
* `due - plain`: what the due turn adds (paired per session).

The figure to read: `due - plain` with precompute should be as small as
`reuse - plain`, and without it is the summarizer's time.
"""

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import common
import proxy_latency as pl

PROFILES_TOML = """\
[profiles.on]
max_messages_before_summary = 12
min_recent_messages = 4
llm_min_tokens = 0
max_summary_tokens = 120

[profiles.off]
max_messages_before_summary = 12
min_recent_messages = 4
llm_min_tokens = 0
max_summary_tokens = 120
precompute_at = 0
"""

PLAIN, AHEAD, DUE, REUSE = 4, 5, 6, 7


def user(s, i):
    return {"role": "user", "content": (
        f"Session {s}, step {i} of the Ravensholm port: move parse_{i} from src/old/m{i}.rs "
        f"to src/new/m{i}.rs, keep its tests green, and tell me what changed."
    )}


def assistant(s, i):
    return {"role": "assistant", "content": (
        f"Session {s}: moved parse_{i} to src/new/m{i}.rs; cargo test passes ({40 + i} tests). "
        "The old module re-exports it."
    )}


def jobs(conn):
    """(started, ended) background summaries, from /metrics."""
    _, status, _, body = conn.request("GET", "/metrics")
    assert status == 200
    started = ended = 0.0
    for line in body.decode().splitlines():
        if line.startswith("condense_precompute_jobs_total{"):
            value = float(line.rsplit(" ", 1)[1])
            if 'outcome="started"' in line:
                started += value
            elif "skipped" not in line:
                ended += value
    return started, ended


def settle(conn, limit=900.0):
    """Waits until every background summary started has ended."""
    end = time.time() + limit
    while time.time() < end:
        started, ended = jobs(conn)
        if started == ended:
            return
        time.sleep(0.05)
    sys.exit("background summaries did not end")


def session(conn, profile, s):
    """Latencies of the plain, due and reuse turns of one session."""
    history = [{"role": "system", "content": "You are a careful coding agent."}]
    out = {}
    for i in range(REUSE + 1):
        history.append(user(s, i))
        body = json.dumps({"model": "gpt-4o", "messages": history}).encode()
        headers = {"content-type": "application/json", "x-condense-profile": profile}
        dt, status, hdrs, data = conn.request("POST", "/v1/chat/completions", body, headers)
        if status != 200:
            sys.exit(f"{profile} session {s} turn {i}: {status} {data[:300]!r}")
        state = hdrs.get("x-condense-precompute")
        if profile == "on" and i == AHEAD and state != "started":
            sys.exit(f"session {s}: turn {AHEAD} did not start a precompute ({state})")
        if i == DUE:
            if hdrs.get("x-condense-compressed") != "true":
                sys.exit(f"{profile} session {s}: the due turn did not compress: {hdrs}")
            if profile == "on" and state != "used":
                sys.exit(f"session {s}: the due turn did not use the summary written ahead ({state})")
        out[i] = dt
        # The agent thinks: condense's background work ends first.
        settle(conn)
        history.append(assistant(s, i))
    return {"plain": out[PLAIN], "due": out[DUE], "reuse": out[REUSE]}


def summarize(rows):
    def stats(xs):
        return {"p50_ms": common.pct(xs, 50) * 1000, "p99_ms": common.pct(xs, 99) * 1000}
    plain = [r["plain"] for r in rows]
    due = [r["due"] for r in rows]
    reuse = [r["reuse"] for r in rows]
    return {
        "plain": stats(plain),
        "due": stats(due),
        "reuse": stats(reuse),
        "due - plain": stats([d - p for d, p in zip(due, plain)]),
        "reuse - plain": stats([r - p for r, p in zip(reuse, plain)]),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=10, help="sessions per instance")
    ap.add_argument("--llm", default="http://127.0.0.1:8089/v1")
    ap.add_argument("--bin", type=Path, default=common.BINARY)
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    if not args.no_build:
        common.build(quiet=False)
    if not args.bin.exists():
        sys.exit(f"{args.bin} is missing: cargo build --release")

    workdir = Path(tempfile.mkdtemp(prefix="condense-due-turn-"))
    (workdir / "profiles.toml").write_text(PROFILES_TOML)
    stub, stub_port = pl.start_stub()
    servers = []
    try:
        provider = f"http://127.0.0.1:{stub_port}/v1"
        results = {}
        for name in ("on", "off"):
            # The real local model writes the summaries: its window, and
            # time enough for a tiny model on shared cores.
            server = pl.start_condense(
                args.bin, workdir, name, provider,
                CONDENSE_UPSTREAM_URL=args.llm,
                CONDENSE_UPSTREAM_MODEL="SmolLM2-135M-Instruct",
                CONDENSE_UPSTREAM_CONTEXT_WINDOW="8192",
                CONDENSE_UPSTREAM_TIMEOUT="600",
                CONDENSE_UPSTREAM_RETRY_BUDGET="900",
                CONDENSE_REQUEST_TIMEOUT="1200",
            )
            servers.append(server)
            conn = common.Conn(server.port, timeout=1200)
            rows = [session(conn, name, s) for s in range(args.n)]
            conn.close()
            results[name] = summarize(rows)
    finally:
        for server in servers:
            server.stop()
        common.stop(stub)

    print(f"Due turn latency through the proxy, {args.n} sessions per row, "
          f"summarizer {args.llm} (ms)")
    print(f"{'precompute':<11} {'turn':<14} {'p50':>10} {'p99':>10}")
    for name in ("on", "off"):
        for row in ("plain", "due", "reuse", "due - plain", "reuse - plain"):
            s = results[name][row]
            print(f"{name:<11} {row:<14} {s['p50_ms']:>10.1f} {s['p99_ms']:>10.1f}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "stub":
        pl.run_stub(int(sys.argv[2]))
    else:
        main()
