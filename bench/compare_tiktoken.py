#!/usr/bin/env python3
"""Count the thread-fixture corpus with Python tiktoken and compare with condense.

Usage (bench/run.sh does all of this):

    compare_tiktoken.py --corpus CORPUS.json [--iterations N] [--rust RUST.json] [--out PY.json]

CORPUS.json is the JSON array of strings written by
`cargo run --release --example count_corpus -- --dump-corpus CORPUS.json`.
Each text is encoded with one `encode_ordinary` call (single-threaded, no
`encode_batch`); a pass encodes all of them; the reported time is the median of
N passes after one warm-up pass. The total is also checked against
`encode(text, disallowed_special=())`, which is what condense's counts promise
to equal. MB are 10^6 bytes.

With --rust (the JSON that `count_corpus` prints), the token totals of both
sides must be identical for every encoding, or the script exits 1; then it
prints a table of MB/s and the ratio condense / tiktoken, and condense's cold
figure (its piece memo unused) beside `bpe-openai`'s own count (median MB/s).

tiktoken must find its rank files offline: set TIKTOKEN_CACHE_DIR to a folder
holding them under the sha1 of their download URL (bench/run.sh prepares it).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

from common import TIKTOKEN_RANK_FILES

ENCODINGS = ("o200k_base", "cl100k_base")


def check_cache() -> None:
    cache = os.environ.get("TIKTOKEN_CACHE_DIR")
    if not cache:
        sys.exit("TIKTOKEN_CACHE_DIR is not set: tiktoken would try to download its rank files")
    missing = [
        f"{name} ({TIKTOKEN_RANK_FILES[name]})"
        for name in ENCODINGS
        if not os.path.isfile(os.path.join(cache, TIKTOKEN_RANK_FILES[name]))
    ]
    if missing:
        sys.exit(f"TIKTOKEN_CACHE_DIR={cache} lacks the rank files of {', '.join(missing)}")


def measure(texts: list[str], iterations: int) -> dict:
    import tiktoken

    nbytes = sum(len(t.encode("utf-8")) for t in texts)
    results = []
    for name in ENCODINGS:
        enc = tiktoken.get_encoding(name)
        encode = enc.encode_ordinary

        def one_pass() -> int:
            return sum(len(encode(t)) for t in texts)

        tokens = one_pass()  # warm-up, and the total to check
        plain = sum(len(enc.encode(t, disallowed_special=())) for t in texts)
        if plain != tokens:
            sys.exit(
                f"{name}: encode_ordinary gives {tokens} tokens but "
                f"encode(disallowed_special=()) gives {plain}"
            )
        secs = []
        for _ in range(iterations):
            start = time.perf_counter()
            n = one_pass()
            secs.append(time.perf_counter() - start)
            assert n == tokens
        median = statistics.median(secs)
        results.append(
            {
                "encoding": name,
                "tokens": tokens,
                "seconds_median": median,
                "seconds_min": min(secs),
                "mb_per_s": nbytes / median / 1e6,
            }
        )
    return {
        "implementation": f"tiktoken {tiktoken.__version__}",
        "texts": len(texts),
        "bytes": nbytes,
        "iterations": iterations,
        "results": results,
    }


def compare(rust: dict, py: dict) -> bool:
    ok = True
    if rust["texts"] != py["texts"] or rust["bytes"] != py["bytes"]:
        print(
            f"corpus differs: condense saw {rust['texts']} texts / {rust['bytes']} bytes, "
            f"tiktoken {py['texts']} texts / {py['bytes']} bytes",
            file=sys.stderr,
        )
        ok = False
    by_name = {r["encoding"]: r for r in rust["results"]}
    print(
        f"corpus: {py['texts']} texts, {py['bytes'] / 1e6:.2f} MB; "
        f"MB/s of the median of {py['iterations']} passes (condense {rust['iterations']}) "
        "and of the best pass; "
        f"{py['implementation']}; single-threaded, one call per text"
    )
    header = (
        f"{'encoding':<12} {'tokens':>9} {'condense MB/s':>14} {'tiktoken MB/s':>14} {'ratio':>7}"
        f"   {'best-pass MB/s: condense':>24} {'tiktoken':>9} {'ratio':>7}"
        f"   {'cold':>6} {'bpe-openai':>10} {'cold/bpe-openai':>15}"
    )
    print(header)
    print("-" * len(header))
    for p in py["results"]:
        r = by_name.get(p["encoding"])
        if r is None:
            print(f"{p['encoding']}: no condense result", file=sys.stderr)
            ok = False
            continue
        ratio = r["mb_per_s"] / p["mb_per_s"]
        r_best = rust["bytes"] / r["seconds_min"] / 1e6
        p_best = py["bytes"] / p["seconds_min"] / 1e6
        print(
            f"{p['encoding']:<12} {p['tokens']:>9} {r['mb_per_s']:>14.2f} "
            f"{p['mb_per_s']:>14.2f} {ratio:>6.2f}x   {r_best:>24.2f} {p_best:>9.2f} "
            f"{r_best / p_best:>6.2f}x"
            f"   {r.get('cold_mb_per_s', 0):>6.2f} {r.get('bpe_openai_mb_per_s', 0):>10.2f} "
            f"{r.get('cold_mb_per_s', 0) / (r.get('bpe_openai_mb_per_s') or 1):>14.2f}x"
        )
        if r["tokens"] != p["tokens"]:
            print(
                f"TOKEN TOTALS DIFFER for {p['encoding']}: condense {r['tokens']}, "
                f"tiktoken {p['tokens']}",
                file=sys.stderr,
            )
            ok = False
    return ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", required=True, help="JSON array of texts (count_corpus --dump-corpus)")
    ap.add_argument("--iterations", type=int, default=10, help="timed passes (default 10)")
    ap.add_argument("--rust", help="count_corpus's JSON output, to check totals and print the table")
    ap.add_argument("--out", help="also write tiktoken's results as JSON here")
    args = ap.parse_args()
    if args.iterations < 1:
        ap.error("--iterations must be >= 1")

    check_cache()
    with open(args.corpus, encoding="utf-8") as f:
        texts = json.load(f)
    if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
        sys.exit(f"{args.corpus} is not a JSON array of strings")

    py = measure(texts, args.iterations)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump(py, f, indent=2)
    if not args.rust:
        print(json.dumps(py, indent=2))
        return 0
    with open(args.rust, encoding="utf-8") as f:
        rust = json.load(f)
    if not compare(rust, py):
        print("FAIL: condense and tiktoken disagree (see above)", file=sys.stderr)
        return 1
    print("token totals identical on both sides")
    return 0


if __name__ == "__main__":
    sys.exit(main())
