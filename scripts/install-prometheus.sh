#!/usr/bin/env bash
# Installs Debian's `prometheus` package for the metrics tests, when the binary is missing.
# The tests start their own Prometheus on 127.0.0.1 and a free port, with a temporary
# configuration and data directory (test/fixtures/prometheus.ts), so the packaged service is
# neither needed nor wanted: it is neither started nor left enabled at boot
# (apt-install-quietly.sh), so nothing ends up listening on :9090. Needs root, as apt does.
set -euo pipefail

if command -v prometheus >/dev/null; then
  exit 0
fi

echo "install-prometheus: installing prometheus with apt" >&2
# shellcheck source=scripts/apt-install-quietly.sh
source "$(dirname "${BASH_SOURCE[0]}")/apt-install-quietly.sh"
# Without recommends: prometheus-node-exporter would be another service on another port.
apt_install_quietly prometheus

command -v prometheus >/dev/null || { echo "install-prometheus: no prometheus binary after installing the package" >&2; exit 1; }
prometheus --version 2>&1 | head -n 1 >&2
