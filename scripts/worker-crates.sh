#!/usr/bin/env bash
# The crates the worker builds from patched sources (worker/Cargo.toml's [patch.crates-io]):
# each is the published crate, checked against its crates.io checksum, with a change of ours
# that no release of its line carries. worker/README.md ("Patched crates") says which, why,
# and when to drop each.
# Made once into .cache/crates; a second run finds each stamp and does nothing. Every cargo
# command in worker/ needs them, so each script that runs cargo there runs this first.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

# patched NAME VERSION SHA256 STAMP EDIT: the crate unpacked, EDIT run on its directory (it
# must fail when the source is not as expected), then moved into place whole.
patched() {
  local name=$1 version=$2 sha256=$3 stamp=$4 edit=$5
  local dest="$root/.cache/crates/$name-$version"
  [ -f "$dest/$stamp" ] && return 0
  local work="$scratch/$name"
  mkdir "$work"
  local crate="$work/$name-$version.crate"
  # cargo's own download when this machine has one; crates.io otherwise.
  local cached
  cached="$(ls "${CARGO_HOME:-$HOME/.cargo}"/registry/cache/*/"$name-$version.crate" 2>/dev/null | head -1 || true)"
  if [ -n "$cached" ]; then
    cp "$cached" "$crate"
  else
    curl -fsSL --retry 3 -o "$crate" "https://static.crates.io/crates/$name/$name-$version.crate"
  fi
  echo "$sha256  $crate" | sha256sum --check --quiet -
  tar -xzf "$crate" -C "$work"
  if ! "$edit" "$work/$name-$version"; then
    echo "worker-crates: $name $version is not as expected (worker/README.md, Patched crates)" >&2
    exit 1
  fi
  touch "$work/$name-$version/$stamp"
  mkdir -p "$root/.cache/crates"
  rm -rf "$dest"
  mv "$work/$name-$version" "$dest"
}

# DataFlowGraph::clear leaves the previous function's exception tables in place, and they are
# part of the function Cranelift hashes for its incremental cache's key. wasmtime reuses one
# context for function after function, so a function compiled after a trampoline (whose
# try_call made a table) gets another key than the same function compiled first: the cache
# misses at random.
exception_tables_clear() {
  local dfg="$1/src/ir/dfg.rs"
  sed -i 's/^\( *\)self\.alias_regions\.clear();$/&\n\1self.exception_tables.clear();/' "$dfg"
  [ "$(grep -c '^ *self\.exception_tables\.clear();$' "$dfg")" = 1 ]
}
patched cranelift-codegen 0.135.8 6a7b9f73f97da69d6edc9adbfeec068cdb2649f0221be41abd3909267cb1cd53 \
  .patched-exception-tables-clear exception_tables_clear

# A freed instance slot's dirty pages are found with PAGEMAP_SCAN, which reports them into a
# buffer of 32 regions; past 32 disjoint dirty regions the scan stops and the rest of the
# memory is handed to madvise, so the next instance faults on every one of those pages again
# however small its working set. A js request dirties more than 32 (its console.log alone took
# the template from 19 to 29 faults a request). 512 regions is the whole of the worker's
# keep-resident budget (2 MiB, worker/src/engine.rs) in single pages: the scan then stops only
# at the budget. 12 KiB of stack on the thread that drops a store.
pagemap_regions() {
  local pagemap="$1/src/runtime/vm/sys/unix/pagemap.rs"
  sed -i 's/^\( *\)const MAX_REGIONS: usize = 32;$/\1const MAX_REGIONS: usize = 512;/' "$pagemap"
  [ "$(grep -c '^ *const MAX_REGIONS: usize = 512;$' "$pagemap")" = 1 ]
}
patched wasmtime 48.0.8 a2afcadb2e7d0417cb8f3f322c66eff49338b288f22290c0ca0bd3e9570732aa \
  .patched-pagemap-regions pagemap_regions
