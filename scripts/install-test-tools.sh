#!/usr/bin/env bash
# The commands the test suite needs beside Node, installed with Debian's apt when missing
# (root, as apt is): openssl makes the TLS tests' certificates, yamllint checks deploy/,
# Chromium runs the browser tests (driven by playwright-core), and Prometheus runs the metrics
# tests' queries. PostgreSQL comes with scripts/test-postgres.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
command -v openssl >/dev/null || missing+=(openssl)
command -v yamllint >/dev/null || missing+=(yamllint)
command -v chromium >/dev/null || missing+=(chromium)
# debootstrap makes the rust builder's toolchain root (scripts/rust-wasm-root.sh).
command -v debootstrap >/dev/null || missing+=(debootstrap)
# bubblewrap is every build step's sandbox on the local runtime (builders/src/sandbox/).
command -v bwrap >/dev/null || missing+=(bubblewrap)
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-test-tools: installing ${missing[*]} with apt" >&2
  source scripts/apt-install-quietly.sh
  apt_install_quietly "${missing[@]}"
fi

# Apart, because its packaged service must not start (see the script).
scripts/install-prometheus.sh

# The CNCF distribution registry (Debian's docker-registry) for the builder and host tests'
# real OCI registry; its packaged service must not start either: the tests start their own.
if ! command -v docker-registry >/dev/null; then
  echo "install-test-tools: installing docker-registry with apt" >&2
  source scripts/apt-install-quietly.sh
  apt_install_quietly docker-registry
fi
