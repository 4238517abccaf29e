#!/usr/bin/env bash
# Installs Debian's `prometheus` package for the metrics tests, when the binary is missing.
# The tests start their own Prometheus on 127.0.0.1 and a free port, with a temporary
# configuration and data directory (test/fixtures/prometheus.ts), so the packaged service is
# neither needed nor wanted: while installing, services are kept from starting (policy-rc.d),
# so nothing ends up listening on :9090. Needs root, as apt does.
set -euo pipefail

if command -v prometheus >/dev/null; then
  exit 0
fi

echo "install-prometheus: installing prometheus with apt" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >&2

# invoke-rc.d asks /usr/sbin/policy-rc.d whether it may start a service; 101 means no. Keep an
# existing policy as it is; otherwise put one in place only for this install.
temporary_policy=
if [ ! -e /usr/sbin/policy-rc.d ]; then
  temporary_policy=/usr/sbin/policy-rc.d
  printf '#!/bin/sh\nexit 101\n' > "$temporary_policy"
  chmod 755 "$temporary_policy"
  trap 'rm -f "$temporary_policy"' EXIT
fi

# Without recommends: prometheus-node-exporter would be another service on another port.
apt-get install -y -qq --no-install-recommends prometheus >&2

command -v prometheus >/dev/null || { echo "install-prometheus: no prometheus binary after installing the package" >&2; exit 1; }
prometheus --version 2>&1 | head -n 1 >&2
