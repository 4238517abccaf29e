//! `--baseline-first`: an application whose components were never compiled answers first from
//! Winch's code, compiled in a fraction of Cranelift's time, while Cranelift compiles it on a
//! thread of its own; the application then moves to Cranelift's code (`slot.rs`), as a
//! redeploy does: requests in flight finish on the code they started on. Only Cranelift's form
//! is written to the compiled cache: the next load of the digest maps it and Winch is not used.

use crate::cache::{CacheError, Compiled, ComponentCache, Lookup};
use crate::executor::Linkers;
use crate::load_pool::LoadPool;
use crate::log;
use serde_json::json;
use std::path::Path;
use std::time::Instant;
use wasmtime::Engine;

/// Nice 10 for the calling thread (Linux schedules threads apart, by their own tid); a failure
/// leaves it at the process's priority.
fn lower_priority() {
    // SAFETY: gettid and setpriority only read and set the calling thread's scheduling value.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, tid, 10);
    }
}

pub struct Baseline {
    pub engine: Engine,
    /// Linked against the baseline engine: a component links only with its own engine's.
    pub linkers: Linkers,
    /// Cranelift's compiles behind baseline loads, one at a time and in order: on two cores a
    /// second beside it would take the CPU the first answers need.
    pub optimize: LoadPool,
    /// Where those compiles' functions are compiled: wasmtime compiles a module's functions
    /// on rayon's pool, and on the global one the next build's Winch compile queued behind
    /// every function of a background compile (a js second deploy waited 8.7 s at load 17).
    /// One thread at a lower priority: the rest of the machine answers and builds first.
    pub background: rayon::ThreadPool,
}

impl Baseline {
    pub fn new() -> wasmtime::Result<Baseline> {
        let engine = crate::engine::baseline_engine()?;
        crate::engine::start_ticker(&engine);
        Ok(Baseline {
            linkers: Linkers::new(&engine)?,
            engine,
            optimize: LoadPool::new("optimize", 1),
            background: rayon::ThreadPoolBuilder::new()
                .num_threads(1)
                .thread_name(|_| "optimize-compile".into())
                .start_handler(|_| lower_priority())
                .build()
                .map_err(|e| wasmtime::format_err!("the optimizing thread: {e}"))?,
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
