#!/usr/bin/env bash
# `npm test`: every test of the code, complete on a fresh clone. Installs what the tests need
# with apt when it is missing (scripts/install-test-tools.sh), builds the test cluster's
# Kubernetes, spin-operator and the OpenTelemetry Collector once per version
# (scripts/install-kube-apiserver.sh, scripts/install-otel-collector.sh,
# scripts/install-spin-operator.sh), starts a throwaway PostgreSQL
# so the control-plane suite runs on both of its engines (unless TEST_DATABASE_URL already
# names one), then lints (ESLint, knip), typechecks, builds and runs tap; the whole suite first
# builds and tests the worker runtime (scripts/test-worker.sh), whose binary the go and rust
# builder tests serve their builds with. Arguments go to tap.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-test-tools.sh
# Four independent installs, side by side (their costs are in docs/testing.md): the test
# cluster's control plane (kube-apiserver, kube-controller-manager, etcd; test/helpers/
# kube-apiserver.ts), spin-operator and the trace tests' OpenTelemetry Collector
# (test/helpers/otel-collector.ts), each built from the Go module proxy once per version
# into a cache outside the clone (minutes, once per machine), and the rust builder's toolchain
# root (Debian 13's rustc with the wasm32 standard library, about 2 min once, into
# .cache/rust-wasm; test/builders/builder-rust.test.ts). With them there each returns at once.
# Their output goes to a log each, shown when one fails.
mkdir -p .cache/test-output
echo "test: installing the cluster binaries and the rust root if missing (logs: .cache/test-output/install-*.log, rust-wasm-root.log)" >&2
pids=()
for install in install-kube-apiserver install-spin-operator install-otel-collector rust-wasm-root; do
  scripts/$install.sh >/dev/null 2>".cache/test-output/$install.log" &
  pids+=("$!:$install")
done
for entry in "${pids[@]}"; do
  if ! wait "${entry%%:*}"; then
    echo "scripts/${entry#*:}.sh failed:" >&2
    tail -n 40 ".cache/test-output/${entry#*:}.log" >&2
    exit 1
  fi
done
if [ -z "${TEST_DATABASE_URL:-}" ]; then
  # Installs postgresql with apt when it is missing, starts it on loopback, exports TEST_DATABASE_URL.
  source scripts/test-postgres.sh
  trap 'scripts/test-postgres.sh stop "$TEST_POSTGRES_DIR"' EXIT
fi

npm run --silent lint
npm run --silent typecheck
npm run --silent build
# The build that just succeeded is what `npm run relay` (and control, dev) would otherwise make
# again mid-suite (scripts/build-if-changed.mjs), rewriting dist/ and the worker under the tests
# still running (test/scripts/npm-signals.test.ts starts `npm run relay`).
touch dist/.built
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
