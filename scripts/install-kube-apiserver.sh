#!/usr/bin/env bash
# Builds the real Kubernetes API server and etcd for the cluster tests (test/helpers/kube-apiserver.ts),
# and kustomize for the manifest tests, from the Go module proxy at the pinned versions below, into
# .cache/kube/<version>/bin/. A second
# run finds the binaries there and does nothing, so `npm test` (scripts/test.sh) pays once per
# version. Prints the bin directory on stdout; the build's own output goes to stderr.
#
# `go install k8s.io/kubernetes/cmd/kube-apiserver@v1.x` is refused: k8s.io/kubernetes's go.mod
# replaces its staging modules (k8s.io/api, k8s.io/apiserver, ...) with directories of its own
# repository. The staging modules are published on their own at v0.x of the same release, so a
# throwaway module in the cache directory requires k8s.io/kubernetes and replaces each staging
# module with its published v0.x; `go build` then builds exactly that release. etcd's server
# module has the same kind of replace directives (for its sibling modules), so it is built the
# same way. Debian's etcd-server is 3.4, older than the 3.5 the API server supports (its go.mod
# pins the etcd 3.7 client), hence our own.
#
# Needs Go (GO, or `go` on PATH, or /usr/local/go/bin/go) at least the version the Kubernetes
# release asks for (1.26 for 1.37), and the module proxy. Builds run under `nice -n 10`.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

KUBE_VERSION=v1.37.2  # k8s.io/kubernetes; its staging modules are v0.37.2
ETCD_VERSION=v3.7.3   # go.etcd.io/etcd/server/v3 and its siblings (Kubernetes 1.37 pins the v3.7 client)
KUSTOMIZE_VERSION=v5.8.2  # sigs.k8s.io/kustomize/kustomize/v5 (v5.8.3 asks for Go 1.27)

dir=".cache/kube/$KUBE_VERSION"
bin="$dir/bin"
if [ -x "$bin/kube-apiserver" ] && [ "$(cat "$bin/etcd.version" 2>/dev/null)" = "$ETCD_VERSION" ] && [ -x "$bin/etcd" ] \
  && [ "$(cat "$bin/kustomize.version" 2>/dev/null)" = "$KUSTOMIZE_VERSION" ] && [ -x "$bin/kustomize" ]; then
  echo "$PWD/$bin"
  exit 0
fi

go=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
[ -x "$go" ] || { echo "install-kube-apiserver: no Go toolchain (set GO, or install Go $KUBE_VERSION's go.mod version)" >&2; exit 1; }
export GOFLAGS=-mod=mod GOTOOLCHAIN=local CGO_ENABLED=0
mkdir -p "$bin"

staging_version="v0.${KUBE_VERSION#v1.}"

build_kube_apiserver () {
  local src="$dir/src/kube-apiserver"
  rm -rf "$src" && mkdir -p "$src"
  # The staging modules k8s.io/kubernetes replaces, read from its own go.mod at this version.
  local modfile
  modfile=$("$go" mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | sed -n 's/^\t"GoMod": "\(.*\)",$/\1/p')
  local staging
  staging=$(sed -n 's#^\t\(k8s\.io/[a-z0-9-]*\) => \./staging/src/k8s\.io/[a-z0-9-]*$#\1#p' "$modfile")
  [ -n "$staging" ] || { echo "install-kube-apiserver: no staging replaces found in $modfile" >&2; exit 1; }
  {
    echo "module kube-apiserver-build"
    echo
    echo "go $(sed -n 's/^go //p' "$modfile")"
    echo
    echo "require k8s.io/kubernetes $KUBE_VERSION"
    echo
    echo "replace ("
    local module
    for module in $staging; do echo "	$module => $module $staging_version"; done
    echo ")"
  } > "$src/go.mod"
  local pkg=k8s.io/kubernetes/cmd/kube-apiserver
  local minor=${KUBE_VERSION#v1.}
  minor=${minor%%.*}
  # The version the server reports (/version, `--version`), as the release's own build stamps it.
  local ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=1"
  ldflags+=" -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"
  (cd "$src" && "$go" get "$pkg@$KUBE_VERSION" >&2 && nice -n 10 "$go" build -trimpath -ldflags "$ldflags" -o "$root/$bin/kube-apiserver" "$pkg" >&2)
}

build_etcd () {
  local src="$dir/src/etcd"
  rm -rf "$src" && mkdir -p "$src"
  {
    echo "module etcd-build"
    echo
    echo "go 1.26"
    echo
    echo "require go.etcd.io/etcd/server/v3 $ETCD_VERSION"
    echo
    echo "replace ("
    local module
    for module in api/v3 client/pkg/v3 client/v3 pkg/v3; do
      echo "	go.etcd.io/etcd/$module => go.etcd.io/etcd/$module $ETCD_VERSION"
    done
    echo ")"
  } > "$src/go.mod"
  local pkg=go.etcd.io/etcd/server/v3
  (cd "$src" && "$go" get "$pkg@$ETCD_VERSION" >&2 && nice -n 10 "$go" build -trimpath -ldflags "-s -w" -o "$root/$bin/etcd" "$pkg" >&2)
  echo "$ETCD_VERSION" > "$bin/etcd.version"
}

start=$SECONDS
if [ ! -x "$bin/kube-apiserver" ]; then
  echo "install-kube-apiserver: building kube-apiserver $KUBE_VERSION with $("$go" version) (several minutes)" >&2
  build_kube_apiserver
fi
if [ ! -x "$bin/etcd" ] || [ "$(cat "$bin/etcd.version" 2>/dev/null)" != "$ETCD_VERSION" ]; then
  echo "install-kube-apiserver: building etcd $ETCD_VERSION" >&2
  build_etcd
fi
if [ ! -x "$bin/kustomize" ] || [ "$(cat "$bin/kustomize.version" 2>/dev/null)" != "$KUSTOMIZE_VERSION" ]; then
  # The manifest tests render deploy/ with it. Its module has no replace directives: go install works.
  echo "install-kube-apiserver: building kustomize $KUSTOMIZE_VERSION" >&2
  GOBIN="$root/$bin" nice -n 10 "$go" install -trimpath -ldflags "-s -w" "sigs.k8s.io/kustomize/kustomize/v5@$KUSTOMIZE_VERSION" >&2
  echo "$KUSTOMIZE_VERSION" > "$bin/kustomize.version"
fi
rm -rf "$dir/src"
echo "install-kube-apiserver: built in $((SECONDS - start)) s: $("$bin/kube-apiserver" --version), etcd $("$bin/etcd" --version | sed -n 's/^etcd Version: //p'), kustomize $("$bin/kustomize" version)" >&2
echo "$PWD/$bin"
