#!/usr/bin/env bash
# Installs what a tier of the test command needs and this Debian or Ubuntu
# machine lacks (scripts/test.sh runs it first; with everything present it
# only checks):
#
#   scripts/setup.sh fast   a C compiler and pkg-config (ring and the bundled
#                           SQLite are built from C), curl (the docs' examples),
#                           rustfmt and clippy
#   scripts/setup.sh full   also python3 with venv, openssl, PostgreSQL's server
#                           (unless DATABASE_URL is set), Chromium and its driver,
#                           Node.js and npm, g++, cmake and unzip (the local LLM's
#                           one-time build, unless CONDENSE_TEST_LLM_URL is set);
#                           then the Python tools into target/venv and the pinned
#                           agent CLIs into tests/agents/node_modules
#
# apt packages are installed with apt-get as root; anyone else is told which
# to install, and the script fails. The Rust toolchain itself comes from
# rustup, not apt (Debian's is older than the crate's rust-version, 1.88).
set -euo pipefail
cd "$(dirname "$0")/.."

tier="${1:-}"
case "$tier" in
  fast | full) ;;
  *)
    echo "usage: $0 fast|full" >&2
    exit 2
    ;;
esac

command -v cargo >/dev/null || {
  echo "setup: no cargo: install Rust 1.88 or newer with rustup (https://rustup.rs), then run again" >&2
  exit 1
}
for component in rustfmt clippy; do
  subcommand="${component/rustfmt/fmt}"
  cargo "$subcommand" --version >/dev/null 2>&1 && continue
  command -v rustup >/dev/null || {
    echo "setup: cargo $subcommand is missing: install the toolchain's $component component" >&2
    exit 1
  }
  echo "== rustup component add $component"
  rustup component add "$component"
done

# Debian package names, each missing unless its check passes.
missing=()
need() {
  local package="$1"
  shift
  "$@" >/dev/null 2>&1 || missing+=("$package")
}
has() { command -v "$1"; }
# Where scripts/with-postgres.sh looks for the server.
postgres_server() {
  [ -x "${PG_BINDIR:-/nonexistent}/initdb" ] || compgen -G '/usr/lib/postgresql/*/bin/initdb' || has initdb
}

need gcc has cc
need pkg-config has pkg-config
need curl has curl
if [ "$tier" = full ]; then
  need python3 has python3
  # Debian's python3 makes a virtual environment only with python3-venv.
  need python3-venv python3 -c 'import ensurepip, venv'
  need openssl has openssl
  need chromium has chromium
  need chromium-driver has chromedriver
  need nodejs has node
  need npm has npm
  [ -n "${DATABASE_URL:-}" ] || need postgresql postgres_server
  if [ -z "${CONDENSE_TEST_LLM_URL:-}" ]; then
    need g++ has g++
    need cmake has cmake
    need unzip has unzip
  fi
fi

if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
    echo "setup: the $tier tier needs ${missing[*]}; install them as root, then run again:" >&2
    echo "  apt-get update && apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
  echo "== apt-get install ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq </dev/null
  apt-get install -y -qq "${missing[@]}" </dev/null >/dev/null
fi

[ "$tier" = full ] || exit 0

echo "== Python tools in target/venv: the official SDKs (tests/suite/proxy_sdk.rs), selenium (tests/suite/playground.rs), schemathesis (tests/suite/schemathesis.rs), hadolint, tiktoken (tests/fixtures/golden)"
# Not the system interpreter: Debian 12 and Ubuntu 24.04 refuse a global pip
# install (PEP 668). scripts/test.sh puts target/venv/bin first on PATH.
venv=target/venv
[ -x "$venv/bin/python3" ] || python3 -m venv "$venv"
"$venv/bin/python3" -m pip install -q --disable-pip-version-check -r tests/sdk/requirements.txt \
  -r tests/browser/requirements.txt -r tests/schemathesis/requirements.txt \
  -r tests/lint/requirements.txt -r tests/fixtures/golden/requirements.txt

echo "== the pinned agent CLIs, Claude Code and Codex (tests/suite/agents.rs)"
npm ci --prefix tests/agents --no-audit --no-fund --loglevel=error >/dev/null
