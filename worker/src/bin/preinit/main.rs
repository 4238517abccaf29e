//! preinit: the local js builder's pre-initializer, in the place of the wizer binary
//! componentize-js ships (builders/src/sandbox/policy.ts binds it there). componentize-js
//! runs its engine's initialization (the user's module's top level) once at build time and
//! keeps the resulting memory as the component's starting state; that is wizer's job, and this
//! does it with the worker's own wasmtime through wasmtime-wizer, the library wizer became.
//!
//! Why not wizer itself: it compiles the 10 MB engine with Cranelift, about 14 CPU-seconds
//! (9 s on two cores) each time an application's cache has no entry for it, a js
//! application's first build, for code that runs once for some milliseconds. This compiles it
//! with Winch, wasmtime's single-pass compiler, in about 1.8 CPU-seconds (1.3 s), and
//! `cache.rs` keeps that code for the application's next build. A CPU Winch cannot compile
//! for gets Cranelift.
//!
//! What it does, as wizer does: instantiate the module with WASI preview 1 (stdio inherited,
//! the directories given, the environment if asked) and every other import a trap, call
//! `_initialize` if exported and then the init function, and write the module with its
//! memories and globals as they are now, the init function's export removed, and no empty
//! data segment where nothing can refer to one (`trim.rs`). An error is
//! printed as wizer prints it, which componentize-js reads to show the user's own error.
//!
//! It also hands the builder the WASI adapter to link with (`--write-adapter`, `adapter.rs`).

mod adapter;
mod args;
mod cache;
mod cpu_limit;
mod trim;

use std::future::Future;
use std::pin::pin;
use std::process::ExitCode;
use std::task::{Context, Poll, Waker};
use wasmtime::error::Context as _;
use wasmtime::{Config, Engine, Instance, Linker, Store, Strategy, Val};
use wasmtime_wasi::p1::WasiP1Ctx;
use wasmtime_wasi::{FsPerms, WasiCtxBuilder};
use wasmtime_wizer::{InstanceState, SnapshotVal, ValType, Wizer};

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    if argv.first().map(String::as_str) == Some(adapter::FLAG) {
        return adapter::write(&argv[1..]);
    }
    let args = match args::parse(argv) {
        Ok(args) => args,
        Err(message) => {
            eprintln!("preinit: {message}");
            return ExitCode::from(2);
        }
    };
    cpu_limit::explain_when_out();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("Error: {error:?}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &args::Args) -> wasmtime::Result<()> {
    let wasm =
        std::fs::read(&args.input).with_context(|| format!("reading {}", args.input.display()))?;
    let mut wizer = Wizer::new();
    wizer.init_func(args.init_func.clone());
    let (context, instrumented) = wizer.instrument(&wasm)?;

    let cache = cache::dir();
    // The snapshot is the module's state after its init function, whichever compiler ran it.
    let module = engine(Strategy::Winch)
        .and_then(|engine| cache::module(&engine, &instrumented, cache.as_deref()))
        .or_else(|_| {
            cache::module(
                &engine(Strategy::Cranelift)?,
                &instrumented,
                cache.as_deref(),
            )
        })
        .context("failed to compile the Wasm module")?;
    let engine = module.engine().clone();

    let mut wasi = WasiCtxBuilder::new();
    if args.allow_wasi {
        wasi.inherit_stdio();
        if args.inherit_env {
            wasi.inherit_env();
        }
        for dir in &args.dirs {
            let guest = dir.to_string_lossy();
            wasi.preopened_dir(dir, guest, FsPerms::ReadWrite)
                .with_context(|| format!("failed to open directory: {}", dir.display()))?;
        }
        for (guest, host) in &args.map_dirs {
            wasi.preopened_dir(host, guest, FsPerms::ReadWrite)
                .with_context(|| format!("failed to open directory: {}", host.display()))?;
        }
    }
    let mut store = Store::new(&engine, wasi.build_p1());
    let mut linker: Linker<WasiP1Ctx> = Linker::new(&engine);
    if args.allow_wasi {
        wasmtime_wasi::p1::add_to_linker_sync(&mut linker, |ctx| ctx)?;
    }
    // The engine imports its component's interfaces too; none may be called while initializing.
    linker.define_unknown_imports_as_traps(&module)?;
    let instance = linker.instantiate(&mut store, &module)?;

    if let Ok(initialize) = instance.get_typed_func::<(), ()>(&mut store, "_initialize") {
        initialize
            .call(&mut store, ())
            .context("calling the Reactor initialization function")?;
    }
    if args.init_func != "_initialize" {
        let init = instance
            .get_typed_func::<(), ()>(&mut store, &args.init_func)
            .with_context(|| {
                format!(
                    "the Wasm module has no `{}` function of type [] -> []",
                    args.init_func
                )
            })?;
        init.call(&mut store, ())
            .with_context(|| format!("the `{}` function trapped", args.init_func))?;
    }

    let snapshot = ready(wizer.snapshot(
        &context,
        &mut Snapshot {
            store: &mut store,
            instance,
        },
    ))?;
    let snapshot = trim::drop_empty_passive_data(snapshot)?;
    std::fs::write(&args.output, snapshot)
        .with_context(|| format!("writing {}", args.output.display()))?;
    Ok(())
}

fn engine(strategy: Strategy) -> wasmtime::Result<Engine> {
    let mut config = Config::new();
    config.strategy(strategy);
    // The proposals wizer enables that Winch compiles.
    config
        .wasm_multi_memory(true)
        .wasm_multi_value(true)
        .wasm_bulk_memory(true)
        .wasm_simd(true);
    Engine::new(&config)
}

/// The instance's state, read for the snapshot. Every read is synchronous: the trait's
/// futures are ready when first polled.
struct Snapshot<'a> {
    store: &'a mut Store<WasiP1Ctx>,
    instance: Instance,
}

impl InstanceState for Snapshot<'_> {
    async fn global_get(&mut self, name: &str, _: ValType) -> SnapshotVal {
        let global = self
            .instance
            .get_global(&mut *self.store, name)
            .expect("instrumented global");
        match global.get(&mut *self.store) {
            Val::I32(x) => SnapshotVal::I32(x),
            Val::I64(x) => SnapshotVal::I64(x),
            Val::F32(x) => SnapshotVal::F32(x),
            Val::F64(x) => SnapshotVal::F64(x),
            Val::V128(x) => SnapshotVal::V128(x.as_u128()),
            other => panic!(
                "a global of type {:?} cannot be snapshotted",
                other.ty(&*self.store)
            ),
        }
    }

    async fn memory_contents(&mut self, name: &str, contents: impl FnOnce(&[u8]) + Send) {
        let memory = self
            .instance
            .get_memory(&mut *self.store, name)
            .expect("instrumented memory");
        contents(memory.data(&*self.store))
    }
}

/// The output of a future that never waits (see `Snapshot`).
fn ready<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    match future
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(output) => output,
        Poll::Pending => unreachable!("the snapshot's reads are synchronous"),
    }
}
