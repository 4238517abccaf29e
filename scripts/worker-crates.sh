#!/usr/bin/env bash
# The crates the worker builds from patched sources (worker/Cargo.toml's [patch.crates-io]):
# each is the published crate, checked against its crates.io checksum, with a change of ours
# that no release carries yet. worker/README.md ("Patched crates") says which, why, and when
# to drop each.
# Made once into .cache/crates; a second run finds its stamp and does nothing. Every cargo
# command in worker/ needs them, so each script that runs cargo there runs this first.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
name=cranelift-codegen
version=0.135.8
sha256=6a7b9f73f97da69d6edc9adbfeec068cdb2649f0221be41abd3909267cb1cd53
dest="$root/.cache/crates/$name-$version"
stamp="$dest/.patched-exception-tables-clear"
[ -f "$stamp" ] && exit 0

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
crate="$work/$name-$version.crate"
# cargo's own download when this machine has one; crates.io otherwise.
cached="$(ls "${CARGO_HOME:-$HOME/.cargo}"/registry/cache/*/"$name-$version.crate" 2>/dev/null | head -1 || true)"
if [ -n "$cached" ]; then
  cp "$cached" "$crate"
else
  curl -fsSL --retry 3 -o "$crate" "https://static.crates.io/crates/$name/$name-$version.crate"
fi
echo "$sha256  $crate" | sha256sum --check --quiet -
tar -xzf "$crate" -C "$work"

# DataFlowGraph::clear leaves the previous function's exception tables in place, and they are
# part of the function Cranelift hashes for its incremental cache's key. wasmtime reuses one
# context for function after function, so a function compiled after a trampoline (whose
# try_call made a table) gets another key than the same function compiled first: the cache
# misses at random.
dfg="$work/$name-$version/src/ir/dfg.rs"
sed -i 's/^\( *\)self\.alias_regions\.clear();$/&\n\1self.exception_tables.clear();/' "$dfg"
if [ "$(grep -c '^ *self\.exception_tables\.clear();$' "$dfg")" != 1 ]; then
  echo "worker-crates: $name $version's DataFlowGraph::clear is not as expected (worker/README.md, Patched crates)" >&2
  exit 1
fi
touch "$work/$name-$version/.patched-exception-tables-clear"
mkdir -p "$root/.cache/crates"
rm -rf "$dest"
mv "$work/$name-$version" "$dest"
