//! What the cache holds: a component, or a core module, compiled for the worker's engine.

use std::path::Path;
use wasmtime::component::Component;
use wasmtime::{Engine, Module};

/// A component, or a core module (a wasip1 command for the WAGI executor).
#[derive(Clone)]
pub enum Compiled {
    Component(Component),
    Module(Module),
}

impl Compiled {
    pub fn new(engine: &Engine, bytes: &[u8]) -> wasmtime::Result<Self> {
        if super::is_module(bytes) {
            Module::new(engine, bytes).map(Compiled::Module)
        } else {
            Component::new(engine, bytes).map(Compiled::Component)
        }
    }

    pub fn engine(&self) -> &Engine {
        match self {
            Compiled::Component(c) => c.engine(),
            Compiled::Module(m) => m.engine(),
        }
    }

    pub(super) fn serialize(&self) -> wasmtime::Result<Vec<u8>> {
        match self {
            Compiled::Component(c) => c.serialize(),
            Compiled::Module(m) => m.serialize(),
        }
    }

    /// # Safety
    /// `path` must hold what `serialize` wrote, untouched since (see `ComponentCache::load`).
    pub(super) unsafe fn deserialize_file(
        engine: &Engine,
        path: &Path,
        module: bool,
    ) -> wasmtime::Result<Self> {
        // SAFETY: passed on from the caller.
        unsafe {
            if module {
                Module::deserialize_file(engine, path).map(Compiled::Module)
            } else {
                Component::deserialize_file(engine, path).map(Compiled::Component)
            }
        }
    }
}
