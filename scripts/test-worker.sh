#!/usr/bin/env bash
# The worker runtime (worker/, Rust, wasmtime): a release build and its tests. Cargo keeps its
# build in the project's cache (.cache/worker/target), so a second run compiles only what
# changed; the first, on a new machine, takes about 10-15 minutes on two cores (docs/testing.md).
# Its tests build one js component with the project's own j2w (node_modules), so npm ci first.
set -euo pipefail
cd "$(dirname "$0")/../worker"
# rustup's cargo, where a non-interactive shell has not put it on PATH.
if ! command -v cargo >/dev/null && [ -x "$HOME/.cargo/bin/cargo" ]; then PATH="$HOME/.cargo/bin:$PATH"; fi
../scripts/worker-crates.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-../.cache/worker/target}"
cargo build --release --locked
cargo test --release --locked
