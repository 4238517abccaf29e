#!/usr/bin/env bash
# Builds a test cluster's control plane for the cluster tests (test/helpers/kube-apiserver.ts,
# test/helpers/kube-controllers.ts): kube-apiserver and kube-controller-manager (Kubernetes'
# own; no scheduler: the kubelet stand-in binds its namespace's pods itself), etcd, and kustomize for the manifest tests, from the Go module proxy at the
# pinned versions below. They are kept once per version outside the clone, in
# ${XDG_CACHE_HOME:-~/.cache}/session-relay/kube/<version>/bin (as Go keeps its build cache), so
# every clone on the machine shares one build; the clone's .cache/kube/<version>/bin links to
# them (the path the tests read). Binaries an older clone built in its own .cache/kube are
# adopted into the shared directory rather than built again. A second run finds everything
# and does nothing. Prints the clone's bin directory on stdout; the build's output goes to stderr.
#
# `go install k8s.io/kubernetes/cmd/kube-apiserver@v1.x` is refused: k8s.io/kubernetes's go.mod
# replaces its staging modules (k8s.io/api, k8s.io/apiserver, ...) with directories of its own
# repository. The staging modules are published on their own at v0.x of the same release, so a
# throwaway module in the cache directory requires k8s.io/kubernetes and replaces each staging
# module with its published v0.x; `go build` then builds exactly that release. The two
# Kubernetes commands are built by one `go build`, so the packages they share (most of
# client-go, apiserver and the API types) compile once. etcd's server module has the same kind
# of replace directives (for its sibling modules), so it is built the same way. Debian's
# etcd-server is 3.4, older than the 3.5 the API server supports (its go.mod pins the etcd 3.7
# client), hence our own.
#
# Needs Go (GO, or `go` on PATH, or /usr/local/go/bin/go) at least the version the Kubernetes
# release asks for (1.26 for 1.37), and the module proxy. Builds run under `nice -n 10`.
set -euo pipefail
cd "$(dirname "$0")/.."

KUBE_VERSION=v1.37.2  # k8s.io/kubernetes; its staging modules are v0.37.2
ETCD_VERSION=v3.7.3   # go.etcd.io/etcd/server/v3 and its siblings (Kubernetes 1.37 pins the v3.7 client)
KUSTOMIZE_VERSION=v5.8.2  # sigs.k8s.io/kustomize/kustomize/v5 (v5.8.3 asks for Go 1.27)
KUBE_COMMANDS="kube-apiserver kube-controller-manager"

shared="${XDG_CACHE_HOME:-$HOME/.cache}/session-relay/kube/$KUBE_VERSION"
bin="$shared/bin"
local_bin=".cache/kube/$KUBE_VERSION/bin"

# Whether the shared directory has everything, each versioned binary at its version.
complete () {
  local command
  for command in $KUBE_COMMANDS etcd kustomize; do [ -x "$bin/$command" ] || return 1; done
  [ "$(cat "$bin/etcd.version" 2>/dev/null)" = "$ETCD_VERSION" ] \
    && [ "$(cat "$bin/kustomize.version" 2>/dev/null)" = "$KUSTOMIZE_VERSION" ]
}

# The clone's bin directory links each binary (and version stamp) of the shared one; a binary
# the clone built itself (before the shared directory existed) stays.
link_clone () {
  mkdir -p "$local_bin"
  local file
  for file in "$bin"/*; do
    local name=${file##*/}
    if [ ! -e "$local_bin/$name" ] || [ -L "$local_bin/$name" ]; then ln -sfn "$file" "$local_bin/$name"; fi
  done
}

if complete; then
  link_clone
  echo "$PWD/$local_bin"
  exit 0
fi

mkdir -p "$bin"
# Adopt what this clone built before the shared cache: a copy, not a build.
for name in $KUBE_COMMANDS etcd etcd.version kustomize kustomize.version; do
  if [ ! -e "$bin/$name" ] && [ -f "$local_bin/$name" ] && [ ! -L "$local_bin/$name" ]; then
    cp "$local_bin/$name" "$bin/$name.tmp.$$" && mv "$bin/$name.tmp.$$" "$bin/$name"
  fi
done

go=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
[ -x "$go" ] || { echo "install-kube-apiserver: no Go toolchain (set GO, or install Go $KUBE_VERSION's go.mod version)" >&2; exit 1; }
export GOFLAGS=-mod=mod GOTOOLCHAIN=local CGO_ENABLED=0
# Builds land in a directory of this run and are moved into place, so a clone running the
# script at the same time never sees half a binary.
work="$shared/work.$$"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/out"

staging_version="v0.${KUBE_VERSION#v1.}"

build_kube () {
  local src="$work/kube"
  mkdir -p "$src"
  # The staging modules k8s.io/kubernetes replaces, read from its own go.mod at this version.
  local modfile
  modfile=$("$go" mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | sed -n 's/^\t"GoMod": "\(.*\)",$/\1/p')
  local staging
  staging=$(sed -n 's#^\t\(k8s\.io/[a-z0-9-]*\) => \./staging/src/k8s\.io/[a-z0-9-]*$#\1#p' "$modfile")
  [ -n "$staging" ] || { echo "install-kube-apiserver: no staging replaces found in $modfile" >&2; exit 1; }
  {
    echo "module kube-build"
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
  local minor=${KUBE_VERSION#v1.}
  minor=${minor%%.*}
  # The version the commands report (/version, `--version`), as the release's own build stamps it.
  local ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=1"
  ldflags+=" -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"
  local packages=() command
  for command in "$@"; do packages+=("k8s.io/kubernetes/cmd/$command"); done
  (cd "$src" && "$go" get "k8s.io/kubernetes@$KUBE_VERSION" >&2 \
    && nice -n 10 "$go" build -trimpath -ldflags "$ldflags" -o "$work/out/" "${packages[@]}" >&2)
  for command in "$@"; do mv "$work/out/$command" "$bin/$command"; done
}

build_etcd () {
  local src="$work/etcd"
  mkdir -p "$src"
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
  (cd "$src" && "$go" get "$pkg@$ETCD_VERSION" >&2 && nice -n 10 "$go" build -trimpath -ldflags "-s -w" -o "$work/out/etcd" "$pkg" >&2)
  mv "$work/out/etcd" "$bin/etcd"
  echo "$ETCD_VERSION" > "$bin/etcd.version"
}

start=$SECONDS
missing=()
for command in $KUBE_COMMANDS; do [ -x "$bin/$command" ] || missing+=("$command"); done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-kube-apiserver: building ${missing[*]} $KUBE_VERSION with $("$go" version) (several minutes)" >&2
  build_kube "${missing[@]}"
fi
if [ ! -x "$bin/etcd" ] || [ "$(cat "$bin/etcd.version" 2>/dev/null)" != "$ETCD_VERSION" ]; then
  echo "install-kube-apiserver: building etcd $ETCD_VERSION" >&2
  build_etcd
fi
if [ ! -x "$bin/kustomize" ] || [ "$(cat "$bin/kustomize.version" 2>/dev/null)" != "$KUSTOMIZE_VERSION" ]; then
  # The manifest tests render deploy/ with it. Its module has no replace directives: go install works.
  echo "install-kube-apiserver: building kustomize $KUSTOMIZE_VERSION" >&2
  GOBIN="$work/out" nice -n 10 "$go" install -trimpath -ldflags "-s -w" "sigs.k8s.io/kustomize/kustomize/v5@$KUSTOMIZE_VERSION" >&2
  mv "$work/out/kustomize" "$bin/kustomize"
  echo "$KUSTOMIZE_VERSION" > "$bin/kustomize.version"
fi
link_clone
echo "install-kube-apiserver: built in $((SECONDS - start)) s into $bin: $("$bin/kube-apiserver" --version)," \
  "etcd $("$bin/etcd" --version | sed -n 's/^etcd Version: //p'), kustomize $("$bin/kustomize" version)" >&2
echo "$PWD/$local_bin"
