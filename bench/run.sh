#!/usr/bin/env bash
# Same-run comparison of condense's token counting with Python tiktoken.
#
#   bench/run.sh [ITERATIONS]        (default 10 timed passes per side)
#
# 1. installs tiktoken (pinned, $TIKTOKEN_VERSION) into a venv under target/ if missing;
# 2. gives tiktoken its rank files offline: copies them from the tiktoken-rs crate's
#    assets into a TIKTOKEN_CACHE_DIR under target/, named as tiktoken caches them;
# 3. runs `examples/count_corpus.rs` (release), which writes the corpus and times condense;
# 4. runs bench/compare_tiktoken.py on the same corpus, which times tiktoken, fails
#    unless both token totals are identical, and prints the table.
#
# Environment: PYTHON (default python3), TIKTOKEN_VERSION (default 0.12.0).
set -euo pipefail

ITERATIONS="${1:-10}"
PYTHON="${PYTHON:-python3}"
TIKTOKEN_VERSION="${TIKTOKEN_VERSION:-0.12.0}"

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

# The target dir (honours CARGO_TARGET_DIR) and the tiktoken-rs assets, from cargo itself.
read -r TARGET_DIR ASSETS < <(cargo metadata --format-version 1 --quiet | "$PYTHON" -c '
import json, os, sys
meta = json.load(sys.stdin)
pkgs = [p for p in meta["packages"] if p["name"] == "tiktoken-rs"]
if not pkgs:
    sys.exit("tiktoken-rs is not in the dependency graph")
print(meta["target_directory"], os.path.join(os.path.dirname(pkgs[0]["manifest_path"]), "assets"))
')
WORK="$TARGET_DIR/bench-tiktoken"
VENV="$WORK/venv"
CACHE="$WORK/tiktoken-cache"
mkdir -p "$WORK" "$CACHE"

# 1. tiktoken in a private venv (nothing outside target/ is touched).
if ! "$VENV/bin/python" -c "import sys, tiktoken; sys.exit(tiktoken.__version__ != '$TIKTOKEN_VERSION')" 2>/dev/null; then
    echo "installing tiktoken==$TIKTOKEN_VERSION into $VENV" >&2
    "$PYTHON" -m venv "$VENV"
    "$VENV/bin/python" -m pip install --quiet "tiktoken==$TIKTOKEN_VERSION"
fi

# 2. Rank files, named sha1(download URL) as tiktoken's cache expects; tiktoken
#    checks their sha256 itself.
for pair in cl100k_base:9b5ad71b2ce5302211f9c61530b329a4922fc6a4 \
            o200k_base:fb374d419588a4632f3f557e76b4b70aebbca790; do
    name="${pair%%:*}"
    sha1="${pair##*:}"
    src="$ASSETS/$name.tiktoken"
    [[ -f "$src" ]] || { echo "missing $src" >&2; exit 1; }
    cmp -s "$src" "$CACHE/$sha1" || cp "$src" "$CACHE/$sha1"
done
export TIKTOKEN_CACHE_DIR="$CACHE"

# 3. condense: writes the corpus, prints its timings as JSON.
cargo build --release --quiet --example count_corpus
"$TARGET_DIR/release/examples/count_corpus" \
    --iterations "$ITERATIONS" --dump-corpus "$WORK/corpus.json" >"$WORK/condense.json"

# 4. tiktoken on the same texts; compares totals (exit 1 if they differ) and prints the table.
"$VENV/bin/python" bench/compare_tiktoken.py \
    --corpus "$WORK/corpus.json" --iterations "$ITERATIONS" \
    --rust "$WORK/condense.json" --out "$WORK/tiktoken.json"
