#!/usr/bin/env bash
# The project's test command (README, docs/testing.md), in two tiers:
#
#   scripts/test.sh fast   formatting, lints, and every test that needs no live
#                          part: those that do are skipped, each with a SKIPPED line
#   scripts/test.sh        all of it (the full tier; CI runs both, .ci/run), against
#                          real parts: a throwaway PostgreSQL (scripts/with-postgres.sh,
#                          unless DATABASE_URL is set) and a real local LLM
#                          (scripts/local-llm.sh, unless CONDENSE_TEST_LLM_URL is set)
#
# Each first installs what it needs and the machine lacks (scripts/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

# One argument at most: the tier.
case "$#:${1:-}" in
  0:) tier=full ;;
  1:fast | 1:full) tier="$1" ;;
  *)
    echo "usage: $0 [fast|full]   (fast: no live part; full, the default: everything)" >&2
    exit 2
    ;;
esac

scripts/setup.sh "$tier"

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== cargo clippy"
cargo clippy --all-targets --locked -- -D warnings

if [ "$tier" = fast ]; then
  echo "== cargo test, no live part (CONDENSE_TEST_SKIP_LIVE=1)"
  # Not the real parts a developer's shell may name: this tier runs without.
  unset DATABASE_URL CONDENSE_TEST_PG_TLS_ROOT CONDENSE_TEST_LLM_URL
  log="$(mktemp)"
  trap 'rm -f "$log"' EXIT
  CONDENSE_TEST_SKIP_LIVE=1 cargo test --all-targets --locked --no-fail-fast 2>&1 | tee "$log"
  echo "== $(grep -c '^SKIPPED' "$log") tests skipped for want of a live part (the SKIPPED lines above); ./scripts/test.sh runs them"
  exit 0
fi

# The Python tools of scripts/setup.sh: the tests run `python3`.
export PATH="$PWD/target/venv/bin:$PATH"

echo "== hadolint Dockerfile"
hadolint Dockerfile

echo "== the golden token counts against Python tiktoken (tests/fixtures/golden/tokens.py --check)"
python3 tests/fixtures/golden/tokens.py --check

echo "== cargo build --tests"
cargo test --all-targets --locked --no-run

started_llm=""
if [ -z "${CONDENSE_TEST_LLM_URL:-}" ]; then
  # Stop it afterwards only if this run started it: a server someone else
  # is using stays up.
  scripts/local-llm.sh status || started_llm=1
  echo "== starting the local LLM (scripts/local-llm.sh; builds once, ~10 min on 2 cores)"
  CONDENSE_TEST_LLM_URL="$(scripts/local-llm.sh start)"
fi
export CONDENSE_TEST_LLM_URL
cleanup() { if [ -n "$started_llm" ]; then scripts/local-llm.sh stop || true; fi; }
trap cleanup EXIT

echo "== cargo test (LLM at $CONDENSE_TEST_LLM_URL)"
# --no-fail-fast: a failing test binary does not hide what the others say.
scripts/with-postgres.sh cargo test --all-targets --locked --no-fail-fast
