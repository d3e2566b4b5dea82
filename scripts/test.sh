#!/usr/bin/env bash
# The project's test command (README, docs/testing.md), in two tiers:
#
#   scripts/test.sh fast   formatting, lints, and every test that needs no live
#                          part: those that do are skipped, each with a SKIPPED line
#   scripts/test.sh        all of it (the full tier; CI runs both, .ci/run), against
#                          real parts: a throwaway PostgreSQL (scripts/with-postgres.sh,
#                          unless DATABASE_URL is set) and a real local LLM
#                          (scripts/local-llm.sh, unless CONDENSE_TEST_LLM_URL is set)
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

echo "== Python clients in a virtual environment (target/venv): the official SDKs (tests/suite/proxy_sdk.rs), selenium (tests/suite/playground.rs), schemathesis (tests/suite/schemathesis.rs); hadolint"
# Not the system interpreter: Debian 12 and Ubuntu 24.04 refuse a global
# pip install (PEP 668). The tests run `python3`, so the environment goes
# first on PATH for everything below.
venv="$PWD/target/venv"
[ -x "$venv/bin/python3" ] || python3 -m venv "$venv"
export PATH="$venv/bin:$PATH"
python3 -m pip install -q --disable-pip-version-check -r tests/sdk/requirements.txt \
  -r tests/browser/requirements.txt -r tests/schemathesis/requirements.txt -r tests/lint/requirements.txt

echo "== the pinned agent CLIs, Claude Code and Codex (tests/suite/agents.rs)"
npm ci --prefix tests/agents --no-audit --no-fund --loglevel=error >/dev/null

echo "== hadolint Dockerfile"
hadolint Dockerfile

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
