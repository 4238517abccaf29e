#!/usr/bin/env bash
# `npm test`: every test of the code, complete on a fresh clone. Installs what the tests need
# with apt when it is missing (scripts/install-test-tools.sh), builds the real Kubernetes API
# server once (scripts/install-kube-apiserver.sh), starts a throwaway PostgreSQL
# so the control-plane suite runs on both of its engines (unless TEST_DATABASE_URL already
# names one), then lints (ESLint, knip), typechecks, builds and runs tap; the whole suite first
# builds and tests the worker runtime (scripts/test-worker.sh), whose binary the go and rust
# builder tests serve their builds with. Arguments go to tap.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-test-tools.sh
# kube-apiserver and etcd for the cluster tests (test/helpers/kube-apiserver.ts): built from the
# Go module proxy when .cache/kube/<version>/bin lacks them (minutes, once per version); with
# them there the script returns at once.
scripts/install-kube-apiserver.sh >/dev/null
# The rust builder's toolchain root (Debian 13's rustc with the wasm32 standard library), made
# once into .cache/rust-wasm (about 2 min) and reused: test/builders/builder-rust.test.ts.
scripts/rust-wasm-root.sh >/dev/null
if [ -z "${TEST_DATABASE_URL:-}" ]; then
  # Installs postgresql with apt when it is missing, starts it on loopback, exports TEST_DATABASE_URL.
  source scripts/test-postgres.sh
  trap 'scripts/test-postgres.sh stop "$TEST_POSTGRES_DIR"' EXIT
fi

npm run --silent lint
npm run --silent typecheck
npm run --silent build
npm run --silent build:bench
if [ $# -eq 0 ]; then
  # The whole suite: coverage below the thresholds in package.json's "tap" section fails it.
  # A few files alone cover only part of the code, so they are held to no threshold.
  scripts/test-worker.sh
  if [ -t 1 ]; then
    npx tap --no-allow-incomplete-coverage
  else
    # Not a terminal (CI): keep tap's output and, after a failure, end the log with what failed,
    # since a CI summary shows only the log's end.
    mkdir -p .cache/test-output
    status=0
    npx tap --no-allow-incomplete-coverage 2>&1 | tee .cache/test-output/tap.log || status=$?
    if [ "$status" -ne 0 ]; then
      node scripts/tap-failures.mjs .cache/test-output/tap.log
      exit "$status"
    fi
  fi
else
  npx tap "$@"
fi
