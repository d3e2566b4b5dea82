#!/usr/bin/env python3
"""condense's /v1/tokens beside LiteLLM proxy's /utils/token_counter, in one run.

    bench/peers.py [--duration 10] [--connections 8] [--no-build] [--no-litellm]

Builds condense (release), starts it (no cache) and the LiteLLM proxy (in a
virtualenv under target/, `LITELLM_LOCAL_MODEL_COST_MAP=True`, tiktoken's rank
files given offline), and drives both with wrk (`-t2 -c8`, bounded time, on
loopback) with the same bodies:

* cold: the largest fixture thread (large-04, ~140k tokens, ~560 KB) with a
  fresh nonce in every message of every request, so no message was seen before;
* turns: the same thread re-sent turn after turn with one new message each
  time (50 turns, cycled), what agents do;
* short: 10 short messages;
* scale-up: cold again, condense alone, pinned to one core (`taskset -c 0`)
  and on all cores: the ratio is what more cores buy.

Prints one table: measurement, condense, peer, ratio, target, met (the
issue's targets: cold >= 10x, turns >= 50x; short has none but "unchanged or
better", read against an earlier run: `--condense` runs another binary, say
main's, with the same bodies). Needs wrk (Debian's `wrk`), taskset and
python3 with venv.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import common

ROOT = common.ROOT
TARGET = common.TARGET
LITELLM_VERSION = os.environ.get("LITELLM_VERSION", "")  # empty: the registry's newest
NONCE = "\0"  # the piece separator of bodies.lua's nonce mode
# Issue 37's ratios to LiteLLM; short threads: "unchanged or better" (against an earlier run).
TARGETS = {"cold": 10, "turns": 50, "short": None}


def tiktoken_cache():
    """tiktoken's rank files, named as its cache expects, from tiktoken-rs's assets."""
    meta = json.loads(subprocess.check_output(["cargo", "metadata", "--format-version", "1", "--quiet"], cwd=ROOT))
    crate = next(p for p in meta["packages"] if p["name"] == "tiktoken-rs")
    assets = Path(crate["manifest_path"]).parent / "assets"
    cache = TARGET / "bench-tiktoken" / "tiktoken-cache"
    cache.mkdir(parents=True, exist_ok=True)
    for name, sha1 in common.TIKTOKEN_RANK_FILES.items():
        shutil.copyfile(assets / f"{name}.tiktoken", cache / sha1)
    return cache


def litellm_venv():
    venv = TARGET / "bench-litellm" / "venv"
    if not (venv / "bin" / "litellm").exists():
        print("installing litellm[proxy] into", venv, file=sys.stderr)
        subprocess.check_call([sys.executable, "-m", "venv", str(venv)])
        spec = f"litellm[proxy]=={LITELLM_VERSION}" if LITELLM_VERSION else "litellm[proxy]"
        subprocess.check_call([str(venv / "bin" / "pip"), "install", "-q", spec])
    return venv


def start_litellm(venv, work):
    """The LiteLLM proxy on a free port, and its token-counter URL."""
    port = common.free_port()
    config = work / "litellm.yaml"
    config.write_text("model_list:\n  - model_name: gpt-4o\n    litellm_params:\n"
                      "      model: openai/gpt-4o\n      api_key: sk-unused\n")
    # Without DATABASE_URL: LiteLLM would take bench/all.py's PostgreSQL as its own and fail to start.
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env.update(LITELLM_LOCAL_MODEL_COST_MAP="True", TIKTOKEN_CACHE_DIR=str(tiktoken_cache()),
               # Loopback only, no key: neither side authenticates.
               LITELLM_DANGEROUSLY_PERMIT_WEAK_OR_UNSET_MASTER_KEY="true",
               LITELLM_LOG="ERROR")
    proc = subprocess.Popen(
        [str(venv / "bin" / "litellm"), "--config", str(config), "--host", "127.0.0.1", "--port", str(port),
         "--num_workers", "1"],
        env=env, stdout=subprocess.DEVNULL, stderr=open(work / "litellm.log", "w"),
    )
    common.wait_ready(f"http://127.0.0.1:{port}/health/liveliness", proc, "LiteLLM proxy")
    return proc, f"http://127.0.0.1:{port}/utils/token_counter"


def bodies(work):
    """The three scenarios' body files for bodies.lua."""
    thread = common.load_thread("large-04.openai")
    messages = thread["messages"]
    out = {}
    # cold: pieces around a nonce placed at the start of every string content.
    marked = []
    for m in messages:
        m = dict(m)
        if isinstance(m.get("content"), str):
            m["content"] = "@@NONCE@@" + m["content"]
        marked.append(m)
    text = json.dumps({"model": "gpt-4o", "messages": marked})
    out["cold"] = ("nonce", text.replace("@@NONCE@@", NONCE))
    # turns: one more message each turn, the newest a user turn.
    # A prefix with calls still waiting for results cannot take a user turn.
    ends, waiting = [], set()
    for n, m in enumerate(messages, 1):
        waiting |= {c["id"] for c in m.get("tool_calls") or []}
        waiting.discard(m.get("tool_call_id"))
        if not waiting:
            ends.append(n)
    ends = ends[-50:]
    turns = []
    for n in ends:
        turn = messages[:n] + [{"role": "user", "content": f"turn {n}: what is the status?"}]
        turns.append(json.dumps({"model": "gpt-4o", "messages": turn}))
    out["turns"] = ("cycle", "\0".join(turns))
    short = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"message number {i}"} for i in range(10)]
    out["short"] = ("cycle", json.dumps({"model": "gpt-4o", "messages": short}))
    files = {}
    for name, (mode, data) in out.items():
        path = work / f"{name}.bodies"
        path.write_bytes(data.encode())
        files[name] = (mode, path)
    return files


def wrk(url, mode, path, duration, connections):
    env = dict(os.environ, BODIES=str(path), MODE=mode)
    out = subprocess.run(
        # A long --timeout: wrk's 2 s default drops a slow peer's answers from
        # its rate instead of counting them (LiteLLM's cold ones under load).
        ["wrk", f"-t{min(2, connections)}", f"-c{connections}", f"-d{duration}s", "--timeout", "60s", "--latency",
         "-s", str(ROOT / "bench/bodies.lua"), url],
        env=env, capture_output=True, text=True, check=True,
    )
    text = out.stdout + out.stderr
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
    lat = {}
    for pct, value, unit in re.findall(r"^\s+(\d+)%\s+([\d.]+)(us|ms|s)\s*$", text, re.M):
        lat[int(pct)] = float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    errors = int(bad.group(1)) if bad else 0
    timeouts = re.search(r"Socket errors:.*timeout (\d+)", text)
    errors += int(timeouts.group(1)) if timeouts else 0
    return {"rps": rps, "p50": lat.get(50), "p99": lat.get(99), "errors": errors}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--connections", type=int, default=8)
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--no-litellm", action="store_true")
    ap.add_argument("--condense", default=str(common.BINARY))
    ap.add_argument("--no-scale", action="store_true", help="skip the 1-core vs all-cores runs")
    args = ap.parse_args()
    common.need_wrk()
    if not args.no_build:
        common.build()

    work = Path(tempfile.mkdtemp(prefix="condense-peers-"))
    files = bodies(work)
    condense, litellm = None, None
    try:
        condense = common.Condense(args.condense, args=["--database-url", "off"], clean=False)
        servers = {"condense": f"{condense.base}/v1/tokens"}
        if not args.no_litellm:
            litellm, servers["LiteLLM"] = start_litellm(litellm_venv(), work)

        results = {}
        for scenario, (mode, path) in files.items():
            for name, url in servers.items():
                # A short warm-up, then the measured run.
                wrk(url, mode, path, 2, args.connections)
                results[(scenario, name)] = wrk(url, mode, path, args.duration, args.connections)
        rss = condense.rss_mb("VmHWM")
    finally:
        if condense:
            condense.stop()
        if litellm:
            common.stop(litellm)
    scale = {} if args.no_scale else scale_up(args, files["cold"])

    print(f"\nwrk -t2 -c{args.connections} -d{args.duration}s on loopback; condense peak RSS {rss:.0f} MB\n")
    print("| measurement | condense | LiteLLM | ratio | target | met |")
    print("|---|---|---|---|---|---|")
    for scenario in files:
        c = results[(scenario, "condense")]
        p = results.get((scenario, "LiteLLM"))
        cell = lambda r: f"{r['rps']:.1f} req/s, p50 {r['p50']:.1f} ms, p99 {r['p99']:.1f} ms" + (f", {r['errors']} errors" if r["errors"] else "")
        ratio = c["rps"] / p["rps"] if p and p["rps"] else None
        target = TARGETS[scenario]
        met = "" if target is None or ratio is None else ("yes" if ratio >= target else "no")
        print(f"| /v1/tokens {scenario} | {cell(c)} | {cell(p) if p else '-'} | "
              f"{f'{ratio:.1f}x' if ratio else '-'} | {f'>= {target}x' if target else '-'} | {met} |")
    if scale:
        one, every = scale[1], scale[os.cpu_count()]
        print(f"| /v1/tokens cold, condense on 1 core vs all {os.cpu_count()} | {cell(every)} | "
              f"1 core: {cell(one)} | {every['rps'] / one['rps']:.2f}x | - |  |")


def scale_up(args, cold):
    """Cold on one core (`taskset -c 0`) and on all: condense alone, a fresh process each."""
    mode, path = cold
    out = {}
    for cores, wrap in ((1, ["taskset", "-c", "0"]), (os.cpu_count(), [])):
        condense = common.Condense(args.condense, args=["--database-url", "off"], clean=False, wrap=wrap)
        try:
            url = f"{condense.base}/v1/tokens"
            wrk(url, mode, path, 2, args.connections)
            out[cores] = wrk(url, mode, path, args.duration, args.connections)
        finally:
            condense.stop()
    return out


if __name__ == "__main__":
    main()
