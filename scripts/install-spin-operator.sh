#!/usr/bin/env bash
# Builds spin-operator (github.com/spinkube/spin-operator, the Go module the project publishes its
# releases as) at the pinned version for the cluster tests, which run it against their API
# server (test/helpers/spin-operator.ts) with the CRDs of the same tag (test/fixtures/crds/).
# Kept once per version outside the clone, in
# ${XDG_CACHE_HOME:-~/.cache}/session-relay/spin-operator/<version>/bin, shared by every clone
# on the machine; the clone's .cache/spin-operator/<version>/bin links to it (the path the tests
# read). A second run does nothing. Prints the clone's bin directory on stdout.
#
# The module has no replace directives, so it builds as released; its main package is cmd/. Needs Go (GO, or `go` on PATH, or /usr/local/go/bin/go) and the
# module proxy. The build runs under `nice -n 10`.
set -euo pipefail
cd "$(dirname "$0")/.."

SPIN_OPERATOR_VERSION=v0.6.1  # github.com/spinkube/spin-operator; the tag the CRDs in test/fixtures/crds name

shared="${XDG_CACHE_HOME:-$HOME/.cache}/session-relay/spin-operator/$SPIN_OPERATOR_VERSION"
bin="$shared/bin"
local_bin=".cache/spin-operator/$SPIN_OPERATOR_VERSION/bin"

if [ ! -x "$bin/spin-operator" ]; then
  go=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
  [ -x "$go" ] || { echo "install-spin-operator: no Go toolchain (set GO)" >&2; exit 1; }
  export GOFLAGS=-mod=mod GOTOOLCHAIN=local CGO_ENABLED=0
  start=$SECONDS
  work="$shared/work.$$"
  trap 'rm -rf "$work"' EXIT
  mkdir -p "$work" "$bin"
  echo "install-spin-operator: building spin-operator $SPIN_OPERATOR_VERSION with $("$go" version)" >&2
  # A throwaway module requiring the release, as `go install pkg@version` would build it (which
  # the proxy refuses here: it asks for the module's version list, 403 for this module).
  printf 'module spin-operator-build\n\ngo 1.24.3\n\nrequire github.com/spinkube/spin-operator %s\n' \
    "$SPIN_OPERATOR_VERSION" > "$work/go.mod"
  (cd "$work" && "$go" get "github.com/spinkube/spin-operator@$SPIN_OPERATOR_VERSION" >&2 \
    && nice -n 10 "$go" build -trimpath -ldflags "-s -w" -o "$work/spin-operator" github.com/spinkube/spin-operator/cmd >&2)
  # Moved into place whole, so a clone running the script at the same time never sees half a binary.
  mv "$work/spin-operator" "$bin/spin-operator"
  echo "install-spin-operator: built in $((SECONDS - start)) s into $bin" >&2
fi
mkdir -p "$local_bin"
[ -e "$local_bin/spin-operator" ] && [ ! -L "$local_bin/spin-operator" ] || ln -sfn "$bin/spin-operator" "$local_bin/spin-operator"
echo "$PWD/$local_bin"
