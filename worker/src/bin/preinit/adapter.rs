//! `preinit --write-adapter PATH`: wasmtime's WASI preview 1 adapter for the local js builder
//! to link in the place of the one componentize-js takes from jco (builders/src/js-preinit.ts
//! binds it over that file).
//!
//! Why: the engine reaches WASI through preview 1 (`fd_write` for `console.log`), so every
//! component carries an adapter, and jco's was built without bulk memory: on an instance's
//! first `console.log` it sets up its descriptor table and copies it (6 KB, twice) byte loop
//! by byte loop, about 3 µs of every such request. wasmtime's copies with `memory.copy`.
//! Which one: wasmtime 36's, an LTS line, the adapter the rust builds link too
//! (scripts/rust-wasm-root.sh): it imports WASI 0.2.6, which Spin 3.x, the shim and the
//! worker all provide, where the worker's own wasmtime's (48) imports 0.2.12, which older
//! hosts lack.

use std::path::Path;
use std::process::ExitCode;
use wasi_preview1_component_adapter_provider::WASI_SNAPSHOT_PREVIEW1_REACTOR_ADAPTER;

pub const FLAG: &str = "--write-adapter";

/// `args`: what follows the flag, one path.
pub fn write(args: &[String]) -> ExitCode {
    let [path] = args else {
        eprintln!("preinit: {FLAG} takes one path");
        return ExitCode::from(2);
    };
    match std::fs::write(Path::new(path), WASI_SNAPSHOT_PREVIEW1_REACTOR_ADAPTER) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("preinit: writing {path}: {error}");
            ExitCode::FAILURE
        }
    }
}
