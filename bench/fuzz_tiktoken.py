#!/usr/bin/env python3
"""Differential fuzz of condense's token counts against Python tiktoken.

    fuzz_tiktoken.py [--cases N] [--seed S] [--batch B] [--bin COUNT_LINES]
    fuzz_tiktoken.py --emit [--cases N] [--seed S]

Draws N texts (seeded, so a run can be repeated): random Unicode from many
scripts, code, whitespace runs, long repeats, and texts whose UTF-8 bytes were
cut at arbitrary points and decoded lossily (U+FFFD where a character was cut,
as a JSON body made of such bytes arrives), each alone or several joined.
tiktoken counts each (`encode_ordinary`, in o200k_base and cl100k_base).

By default the texts stream in batches through `examples/count_lines.rs`
(condense's `Encoders::count`, one call per text; built with
`cargo build --release --example count_lines` unless --bin names it), and the
script exits 1 at the first batch holding a difference, printing the texts
that differ. `--emit` instead prints one JSON line per text,
`{"text": …, "o200k_base": n, "cl100k_base": m}`, for the suite's own
differential test (`tests/suite/api/differential.rs`) to count and compare.

tiktoken must find its rank files offline: TIKTOKEN_CACHE_DIR, or else the
golden script's copy of tiktoken-rs's assets under the target dir.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENCODINGS = ("o200k_base", "cl100k_base")

# Code point ranges a text draws from, with weights: scripts with and without
# case, marks, digits of other scripts, letter-like numbers, Unicode spaces,
# emoji and their joiners, and anything at all (no surrogates: not UTF-8).
RANGES = [
    (30, 0x20, 0x7E),  # printable ASCII
    (4, 0x00, 0x1F),  # controls, \t \n \r among them
    (6, 0x80, 0x24F),  # Latin-1, Latin Extended (ſ, ǅ, µ, ª, ¹ …)
    (4, 0x250, 0x36F),  # IPA, modifier letters, combining marks
    (5, 0x370, 0x52F),  # Greek, Cyrillic
    (3, 0x590, 0x6FF),  # Hebrew, Arabic (Arabic-Indic digits)
    (3, 0x900, 0x9FF),  # Devanagari, Bengali: spacing and non-spacing marks
    (2, 0xE00, 0xE7F),  # Thai
    (2, 0x1E00, 0x1FFF),  # Latin Extended Additional, Greek Extended (title case)
    (3, 0x2000, 0x206F),  # Unicode spaces, punctuation, joiners
    (2, 0x2070, 0x218F),  # super/subscripts, letter-like symbols (K, Ω), Roman numerals
    (2, 0x2460, 0x24FF),  # enclosed numbers and letters
    (2, 0x3000, 0x30FF),  # ideographic space, kana
    (6, 0x4E00, 0x9FFF),  # CJK
    (3, 0xAC00, 0xD7A3),  # Hangul
    (2, 0xFE00, 0xFFFD),  # variation selectors, full width, specials
    (4, 0x1F300, 0x1FAFF),  # emoji
    (1, 0x10000, 0x10FFFF),  # anything astral
]
RANGE_WEIGHTS = [w for w, _, _ in RANGES]
SPACES = [" ", "\t", "\n", "\r", "\r\n", "\x0b", "\x0c", "\x85", "\xa0", "\u1680", "\u2000",
          "\u2009", "\u200a", "\u2028", "\u2029", "\u202f", "\u205f", "\u3000", "  ", "    "]
WORDS = ["the", "The", "THE", "don't", "I'm", "we'll", "they're", "it'S", "you've", "he'd",
         "naïve", "café", "Straße", "ǅemal", "ſtate", "Ωmega", "日本語", "привет", "ПРИВЕТ",
         "مرحبا", "नमस्ते", "สวัสดี", "한국어", "😀", "👩‍💻", "🇫🇷", "x²", "Ⅻ", "½", "٣٤٥",
         "123456", "0x1F", "3.14159", "1e-9", "'s", "'LL", "'", "’s"]
CODE = ["fn", "let", "mut", "self", "return", "def", "class", "import", "const", "async",
        "await", "None", "null", "true", "i32", "u8", "Vec<String>", "HashMap", "->", "=>",
        "::", "==", "!=", "<=", "&&", "||", "+=", "//", "/*", "*/", "#", "{", "}", "(", ")",
        "[", "]", ";", ",", ".", ":", "\"", "'", "`", "\\n", "\\\"", "@", "$", "%", "^", "~",
        "snake_case_name", "camelCaseName", "PascalCase", "SCREAMING_CASE", "_private",
        "https://example.com/a/b?c=1&d=2", "/usr/local/bin", "C:\\Users\\x", "<div>", "</div>",
        "0", "42", "1_000_000", "0.5", "-1", "x", "i", "j", "k"]


def random_unicode(rng: random.Random, n: int) -> str:
    out = []
    for _ in range(n):
        _, lo, hi = rng.choices(RANGES, RANGE_WEIGHTS)[0]
        c = rng.randint(lo, hi)
        if 0xD800 <= c <= 0xDFFF:
            c = 0xFFFD
        out.append(chr(c))
    return "".join(out)


def code(rng: random.Random, n: int) -> str:
    out = []
    indent = 0
    for _ in range(n):
        r = rng.random()
        if r < 0.12:
            indent = max(0, indent + rng.choice((-4, 0, 4)))
            out.append(rng.choice(("\n", "\r\n", "\n\n", " \n", "\t\n")) + " " * indent)
        elif r < 0.3:
            out.append(" ")
        elif r < 0.9:
            out.append(rng.choice(CODE))
        else:
            out.append(rng.choice(WORDS))
    return "".join(out)


def whitespace(rng: random.Random, n: int) -> str:
    out = []
    for _ in range(n):
        r = rng.random()
        if r < 0.6:
            out.append(rng.choice(SPACES) * rng.randint(1, 6))
        elif r < 0.8:
            out.append(rng.choice(WORDS))
        else:
            out.append(random_unicode(rng, rng.randint(1, 3)))
    return "".join(out)


def words(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(SPACES[:3] + ["", " ", " "]) + rng.choice(WORDS) for _ in range(n))


def repeat(rng: random.Random) -> str:
    unit = rng.choice([
        lambda: rng.choice(["-", "=", "*", " ", "\n", "ab", "0", "é", "😀", "中", "\t ", ". ", "x-", "'s"]),
        lambda: random_unicode(rng, rng.randint(1, 4)),
        lambda: words(rng, rng.randint(1, 3)),
    ])()
    # Now and then a run past the windowed count's threshold (32 KiB pieces).
    times = rng.randint(40_000, 80_000) // max(1, len(unit.encode())) if rng.random() < 0.002 \
        else rng.randint(2, 400)
    return unit * times


def one(rng: random.Random) -> str:
    kind = rng.random()
    if kind < 0.3:
        return random_unicode(rng, rng.randint(0, 40))
    if kind < 0.5:
        return code(rng, rng.randint(1, 40))
    if kind < 0.65:
        return whitespace(rng, rng.randint(1, 12))
    if kind < 0.8:
        return words(rng, rng.randint(1, 20))
    if kind < 0.87:
        return repeat(rng)
    if kind < 0.97:
        # Cut bytes: a text's UTF-8 sliced at arbitrary points, pieces joined,
        # decoded lossily.
        raw = one(rng).encode()
        parts = []
        for _ in range(rng.randint(1, 3)):
            a = rng.randint(0, len(raw))
            b = rng.randint(a, len(raw))
            parts.append(raw[a:b])
        return b"".join(parts).decode("utf-8", errors="replace")
    return bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 30))).decode("utf-8", errors="replace")


def case(rng: random.Random) -> str:
    if rng.random() < 0.75:
        return one(rng)
    return "".join(one(rng) for _ in range(rng.randint(2, 5)))


def offline_rank_files() -> None:
    sys.path.insert(0, str(ROOT / "tests/fixtures/golden"))
    from tokens import offline_rank_files as golden_offline  # noqa: E402

    golden_offline()


def tiktoken_counts(encodings, texts: list[str]) -> list[tuple[int, int]]:
    counts = [[len(t) for t in enc.encode_ordinary_batch(texts, num_threads=1)] for enc in encodings]
    return list(zip(*counts))


def emit(args, encodings) -> None:
    rng = random.Random(args.seed)
    texts = [case(rng) for _ in range(args.cases)]
    out = sys.stdout
    for text, (o200k, cl100k) in zip(texts, tiktoken_counts(encodings, texts)):
        out.write(json.dumps({"text": text, "o200k_base": o200k, "cl100k_base": cl100k},
                             ensure_ascii=False) + "\n")


def count_lines_bin(given: str | None) -> str:
    if given:
        return given
    subprocess.run(["cargo", "build", "--release", "--quiet", "--example", "count_lines"],
                   cwd=ROOT, check=True)
    meta = json.loads(subprocess.run(["cargo", "metadata", "--format-version", "1", "--no-deps"],
                                     cwd=ROOT, check=True, capture_output=True, text=True).stdout)
    return str(Path(meta["target_directory"]) / "release/examples/count_lines")


def stream(args, encodings) -> int:
    child = subprocess.Popen([count_lines_bin(args.bin)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True, encoding="utf-8", bufsize=1 << 20)
    rng = random.Random(args.seed)
    done = nbytes = 0
    start = time.monotonic()
    while done < args.cases:
        texts = [case(rng) for _ in range(min(args.batch, args.cases - done))]
        # Written by a thread: the child's answers would fill their pipe otherwise.
        writer = threading.Thread(target=lambda: (
            child.stdin.write("".join(json.dumps(t, ensure_ascii=False) + "\n" for t in texts)),
            child.stdin.flush()))
        writer.start()
        theirs = [tuple(map(int, child.stdout.readline().split())) for _ in texts]
        writer.join()
        ours = tiktoken_counts(encodings, texts)
        wrong = [(i, t, o, c) for i, (t, o, c) in enumerate(zip(texts, ours, theirs)) if o != c]
        for i, t, o, c in wrong[:10]:
            print(f"case {done + i}: tiktoken {o}, condense {c}: {t[:300]!r}", file=sys.stderr)
        if wrong:
            print(f"{len(wrong)} differences in batch {done}..{done + len(texts)} "
                  f"(seed {args.seed})", file=sys.stderr)
            child.kill()
            return 1
        done += len(texts)
        nbytes += sum(len(t.encode()) for t in texts)
        print(f"{done} cases, {nbytes / 1e6:.1f} MB, {time.monotonic() - start:.0f} s: "
              "no difference", file=sys.stderr)
    child.stdin.close()
    child.wait()
    print(json.dumps({"cases": done, "bytes": nbytes, "seed": args.seed, "differences": 0,
                      "encodings": list(ENCODINGS), "seconds": round(time.monotonic() - start, 1)}))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=37)
    parser.add_argument("--batch", type=int, default=20_000)
    parser.add_argument("--bin", help="the count_lines example binary (default: build it)")
    parser.add_argument("--emit", action="store_true",
                        help="print the cases and tiktoken's counts as JSON lines")
    args = parser.parse_args()
    if not os.environ.get("TIKTOKEN_CACHE_DIR"):
        offline_rank_files()
    import tiktoken

    encodings = [tiktoken.get_encoding(name) for name in ENCODINGS]
    if args.emit:
        emit(args, encodings)
        return 0
    return stream(args, encodings)


if __name__ == "__main__":
    sys.exit(main())
