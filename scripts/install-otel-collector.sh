#!/usr/bin/env bash
# Builds the tests' OpenTelemetry Collector (test/helpers/otel-collector.ts) from the Go module
# proxy at the pinned version: scripts/otelcol/main.go, the core distribution's OTLP receiver and
# OTLP/HTTP exporter in a throwaway module requiring go.opentelemetry.io/collector's modules at
# that version (what the collector's own builder, ocb, generates for a distribution; the
# published otelcorecol distribution is no module one can require). Kept once per version
# outside the clone, in ${XDG_CACHE_HOME:-~/.cache}/session-relay/otelcol/<version>/bin, shared
# by every clone on the machine; the clone's .cache/otelcol/<version>/bin links to it (the path
# the tests read). A second run does nothing. Prints the clone's bin directory on stdout.
#
# Needs Go 1.26 (GO, or `go` on PATH, or /usr/local/go/bin/go) and the module proxy. The build
# runs under `nice -n 10`.
set -euo pipefail
cd "$(dirname "$0")/.."

OTELCOL_VERSION=v0.165.0  # go.opentelemetry.io/collector/otelcol and its v0 components
OTELCOL_STABLE=v1.71.0    # the same release's v1 modules (confmap's providers)

shared="${XDG_CACHE_HOME:-$HOME/.cache}/session-relay/otelcol/$OTELCOL_VERSION"
bin="$shared/bin"
local_bin=".cache/otelcol/$OTELCOL_VERSION/bin"

if [ ! -x "$bin/otelcol" ]; then
  go=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
  [ -x "$go" ] || { echo "install-otel-collector: no Go toolchain (set GO)" >&2; exit 1; }
  export GOFLAGS=-mod=mod GOTOOLCHAIN=local CGO_ENABLED=0
  start=$SECONDS
  work="$shared/work.$$"
  trap 'rm -rf "$work"' EXIT
  mkdir -p "$work" "$bin"
  echo "install-otel-collector: building the collector $OTELCOL_VERSION with $("$go" version)" >&2
  cp scripts/otelcol/main.go "$work/main.go"
  printf 'module otelcol-build\n\ngo 1.26.0\n' > "$work/go.mod"
  modules=(
    "go.opentelemetry.io/collector/otelcol@$OTELCOL_VERSION"
    "go.opentelemetry.io/collector/receiver/otlpreceiver@$OTELCOL_VERSION"
    "go.opentelemetry.io/collector/exporter/otlphttpexporter@$OTELCOL_VERSION"
    "go.opentelemetry.io/collector/service@$OTELCOL_VERSION"
    "go.opentelemetry.io/collector/confmap/provider/fileprovider@$OTELCOL_STABLE"
    "go.opentelemetry.io/collector/confmap/provider/envprovider@$OTELCOL_STABLE"
  )
  (cd "$work" && "$go" get "${modules[@]}" >&2 \
    && nice -n 10 "$go" build -trimpath -ldflags "-s -w -X main.version=$OTELCOL_VERSION" -o "$work/otelcol" . >&2)
  # Moved into place whole, so a clone running the script at the same time never sees half a binary.
  mv "$work/otelcol" "$bin/otelcol"
  echo "install-otel-collector: built in $((SECONDS - start)) s into $bin" >&2
fi
mkdir -p "$local_bin"
[ -e "$local_bin/otelcol" ] && [ ! -L "$local_bin/otelcol" ] || ln -sfn "$bin/otelcol" "$local_bin/otelcol"
echo "$PWD/$local_bin"
