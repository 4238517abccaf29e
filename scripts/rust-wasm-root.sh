#!/bin/sh
# The Rust toolchain that builds rust functions to wasm32: rustup here carries the host target
# only and cannot download another, so the compiler and its wasm32 standard library come from
# Debian 13 (trixie): rustc, cargo and libstd-rust-dev-wasm32, in a debootstrap root the build
# runs in with chroot (which also keeps build.rs and proc-macros away from the host's files).
# It also holds the WASI preview 1 adapter (crate wasi-preview1-component-adapter-provider,
# pinned) at /opt/adapter/, which turns the wasip1 module cargo makes into a component.
# Made once per package set into .cache/rust-wasm/<key> and reused; prints the root's path.
# Usage: scripts/rust-wasm-root.sh [cache-dir]   (needs root: debootstrap and chroot)
# Cost on a fresh machine: about 90-120 s (debootstrap about 70 s, apt about 20 s), 1.2 GB.
set -eu
# The build's steps run in the root as uid 65534: whatever umask the caller has (a control
# plane's is 077), the root is world-readable.
umask 022
SUITE=trixie
# lld links wasm32 (Debian's rustc has no rust-lld); ca-certificates lets `cargo fetch` reach crates.io.
PACKAGES="rustc cargo libstd-rust-dev-wasm32 lld ca-certificates"
# The adapter of wasmtime 36 (an LTS line): it imports WASI 0.2 interfaces that Spin 3.x, the
# shim and the worker (wasmtime 48) all provide.
ADAPTER_VERSION=36.0.20
here=$(cd "$(dirname "$0")/.." && pwd)
cache=${1:-$here/.cache/rust-wasm}
key=$SUITE-$(printf '%s' "$PACKAGES $ADAPTER_VERSION" | sha256sum | cut -c1-12)
root=$cache/$key
# The builder finds the root through this link (spin/src/toolchains.ts).
if [ -f "$root/.complete" ]; then ln -sfn "$key" "$cache/current"; echo "$root"; exit 0; fi
# Its own prerequisites, with apt when missing (root, as the rest of this script): debootstrap,
# and the host's trust store the adapter's download uses (below).
if [ "$(id -u)" != 0 ]; then echo "rust-wasm-root: needs root (debootstrap and chroot): sudo $0 $cache" >&2; exit 1; fi
missing=
command -v debootstrap >/dev/null || missing="$missing debootstrap"
[ -f /etc/ssl/certs/ca-certificates.crt ] || missing="$missing ca-certificates"
if [ -n "$missing" ]; then
  echo "rust-wasm-root: installing$missing with apt" >&2
  # A machine whose package lists were never fetched knows no package until an update.
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing >/dev/null 2>&1 ||
    { apt-get update -q >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing >/dev/null; }
fi
mirror=$(awk '/^URIs:/ { print $2; exit } /^deb / { print $2; exit }' /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null || true)
mirror=${mirror:-http://deb.debian.org/debian}
partial=$root.partial
# A run killed halfway leaves debootstrap's /proc and /sys mounts behind.
for m in $(awk -v p="$partial/" 'index($2, p) == 1 { print $2 }' /proc/mounts | sort -r); do umount -l "$m" || true; done
rm -rf "$partial"
mkdir -p "$cache"
echo "rust-wasm-root: debootstrap $SUITE from $mirror into $partial" >&2
debootstrap --variant=minbase "$SUITE" "$partial" "$mirror" >"$cache/debootstrap.log" 2>&1 || { tail -20 "$cache/debootstrap.log" >&2; exit 1; }
echo "rust-wasm-root: apt-get install $PACKAGES" >&2
chroot "$partial" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
  sh -c "apt-get update -qq && apt-get install -y -qq --no-install-recommends $PACKAGES" >"$cache/apt.log" 2>&1 || { tail -20 "$cache/apt.log" >&2; exit 1; }
chroot "$partial" apt-get clean
echo "rust-wasm-root: the preview 1 adapter $ADAPTER_VERSION from crates.io" >&2
mkdir -p "$partial/opt/adapter/fetch/src"
printf '[package]\nname = "adapter-fetch"\nversion = "0.0.0"\nedition = "2021"\n[dependencies]\nwasi-preview1-component-adapter-provider = "=%s"\n' "$ADAPTER_VERSION" >"$partial/opt/adapter/fetch/Cargo.toml"
: >"$partial/opt/adapter/fetch/src/lib.rs"
# The host's trust store for this one download: crates.io may be reached through a proxy
# whose authority only the host trusts.
cp /etc/ssl/certs/ca-certificates.crt "$partial/opt/adapter/host-ca.crt"
chroot "$partial" /usr/bin/env -i PATH=/usr/bin:/bin HOME=/tmp CARGO_HOME=/opt/adapter/cargo CARGO_HTTP_CAINFO=/opt/adapter/host-ca.crt \
  sh -c 'cd /opt/adapter/fetch && cargo fetch -q' >"$cache/adapter.log" 2>&1 || { tail -20 "$cache/adapter.log" >&2; exit 1; }
find "$partial/opt/adapter/cargo/registry/src" -name wasi_snapshot_preview1.reactor.wasm -exec cp {} "$partial/opt/adapter/" \;
rm -rf "$partial/opt/adapter/fetch" "$partial/opt/adapter/cargo" "$partial/opt/adapter/host-ca.crt"
test -s "$partial/opt/adapter/wasi_snapshot_preview1.reactor.wasm"
# Mount points of the build sandbox (builders/sandbox.sh).
mkdir -p "$partial/build" "$partial/cargo" "$partial/target"
rm -rf "$partial"/var/lib/apt/lists/* "$partial"/dev/*
for m in $(awk -v p="$partial/" 'index($2, p) == 1 { print $2 }' /proc/mounts | sort -r); do umount -l "$m" || true; done
touch "$partial/.complete"
rm -rf "$root"
mv "$partial" "$root"
ln -sfn "$key" "$cache/current"
echo "$root"
