#!/bin/sh
# One cargo command of a rust build inside the toolchain root (scripts/rust-wasm-root.sh), run
# by the builder under `unshare --mount --pid --fork --ipc --uts` (plus `--net` for the
# compile, which then has no network interface but a down loopback). build.rs and proc-macros
# are the user's code: they see only the read-only toolchain root, the function's source at
# /build, this application's cargo home at /cargo and target directory at /target, a small
# /tmp and /dev/{null,zero,random,urandom}; they run as nobody (65534), with an empty
# environment. Nothing of the machine (the control plane's data, its keys, other applications)
# is mounted. The mounts live in the private mount namespace and go with it.
# Usage: rust-build.sh fetch|offline ROOT SRC CARGO_HOME TARGET cargo ARGS...
set -eu
mode=$1 root=$2 src=$3 home=$4 target=$5
shift 5
mount --bind "$root" "$root"
mount -o remount,bind,ro "$root"
mount --bind "$src" "$root/build"
mount --bind "$home" "$root/cargo"
mount --bind "$target" "$root/target"
mount -t tmpfs -o size=256m,mode=1777 tmpfs "$root/tmp"
mount -t proc proc "$root/proc"
mount -t tmpfs -o size=64k,mode=755 tmpfs "$root/dev"
for device in null zero random urandom; do
  : >"$root/dev/$device"
  mount --bind "/dev/$device" "$root/dev/$device"
done
if [ "$mode" = fetch ]; then
  # Downloads only (cargo fetch runs no build script): the host's trust store, since crates.io
  # may be reached through a proxy whose authority only the host trusts.
  mount --bind /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
fi
# Debian's rustc has no rust-lld: its wasm-ld links. MSRV-aware resolution keeps the lockfile
# on crate versions Debian's rustc compiles.
exec chroot --userspec=65534:65534 "$root" /usr/bin/env -i PATH=/usr/bin:/bin HOME=/tmp \
  CARGO_HOME=/cargo CARGO_TARGET_DIR=/target CARGO_TERM_COLOR=never \
  CARGO_RESOLVER_INCOMPATIBLE_RUST_VERSIONS=fallback CARGO_TARGET_WASM32_WASIP1_LINKER=wasm-ld \
  sh -c 'cd /build && exec "$@"' sh "$@"
