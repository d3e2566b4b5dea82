#!/usr/bin/env bash
# The project's test command (README): formatting, lints, and every test.
# Runs from any directory; needs only a Rust toolchain for now.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== cargo clippy"
cargo clippy --all-targets --locked -- -D warnings

echo "== cargo test"
cargo test --all-targets --locked
