//! `--baseline-first`: an application whose components were never compiled answers first from
//! Winch's code, compiled in a fraction of Cranelift's time, while Cranelift compiles it in a
//! process of its own at the lowest priority (`compile_apart.rs`); the application then moves
//! to Cranelift's code (`slot.rs`), as a redeploy does: requests in flight finish on the code
//! they started on. Only Cranelift's form is written to the compiled cache: the next load of
//! the digest maps it and Winch is not used.

use crate::cache::{CacheError, Compiled, ComponentCache, Lookup};
use crate::executor::Linkers;
use crate::load_pool::LoadPool;
use crate::log;
use serde_json::json;
use std::path::Path;
use std::time::Instant;
use wasmtime::Engine;

pub struct Baseline {
    pub engine: Engine,
    /// Linked against the baseline engine: a component links only with its own engine's.
    pub linkers: Linkers,
    /// Cranelift's compiles behind baseline loads, one at a time and in order: each is a
    /// process of hundreds of MB while it compiles, and one is all a build beside it should meet.
    pub optimize: LoadPool,
    /// The worker's flags, for its compile processes: the same engine and cache.
    pub flags: Vec<String>,
}

impl Baseline {
    pub fn new(flags: Vec<String>) -> wasmtime::Result<Baseline> {
        let engine = crate::engine::baseline_engine()?;
        crate::engine::start_ticker(&engine);
        Ok(Baseline {
            linkers: Linkers::new(&engine)?,
            engine,
            optimize: LoadPool::new("optimize", 1),
            flags,
        })
    }

    /// Whether `compiled` is Winch's code.
    pub fn compiled(&self, compiled: &Compiled) -> bool {
        Engine::same(compiled.engine(), &self.engine)
    }

    /// Cranelift's form of the component when the cache has it, else Winch's (with Cranelift's
    /// when Winch refuses it: a feature it does not have).
    pub fn component(
        &self,
        cache: &ComponentCache,
        wasm_path: &Path,
        expected: Option<&str>,
    ) -> Result<(String, Compiled), CacheError> {
        let (digest, bytes) = match cache.lookup(wasm_path, expected)? {
            Lookup::Found(digest, compiled) => return Ok((digest, compiled)),
            Lookup::Missing { digest, bytes } => (digest, bytes),
        };
        let started = Instant::now();
        match Compiled::new(&self.engine, &bytes) {
            Ok(compiled) => {
                log::info(
                    "component compiled",
                    json!({"digest": digest, "compiler": "winch", "ms": started.elapsed().as_millis() as u64}),
                );
                Ok((digest, compiled))
            }
            Err(e) => {
                log::warn(
                    "the baseline compiler refused the component, compiling it with Cranelift",
                    json!({"digest": digest, "err": format!("{e:#}")}),
                );
                drop(bytes);
                cache.load(wasm_path, expected)
            }
        }
    }
}
