#!/usr/bin/env bash
# The worker runtime's release build (worker/, Rust), into the project's cache
# (.cache/worker/target/release/worker), where the local runtime finds it. Cargo rebuilds only
# what changed: up to date, this takes about a second; on a new machine 10-15 minutes on two
# cores (docs/testing.md). Without cargo it says so and succeeds: the control plane then answers
# 503 naming the missing toolchain when it needs the worker.
set -euo pipefail
cd "$(dirname "$0")/../worker"
# rustup's cargo, where a non-interactive shell has not put it on PATH.
if ! command -v cargo >/dev/null && [ -x "$HOME/.cargo/bin/cargo" ]; then PATH="$HOME/.cargo/bin:$PATH"; fi
if ! command -v cargo >/dev/null; then
  echo "build-worker: cargo is not on PATH; the local runtime needs Rust 1.95 (rustup) to build its worker" >&2
  exit 0
fi
../scripts/worker-crates.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-../.cache/worker/target}"
# cargo --quiet prints nothing while it compiles: without this line a first `npm ci` looked hung
# for the quarter of an hour the worker takes.
if [ ! -x "$CARGO_TARGET_DIR/release/worker" ]; then
  echo "build-worker: compiling the worker runtime (Rust, wasmtime) into $CARGO_TARGET_DIR: 10-15 minutes the first time on two cores, seconds after" >&2
fi
cargo build --release --locked --quiet
