//! The worker: one process that serves every deployed Spin application of a machine, each on
//! its own loopback port, driven by its parent (the control plane) over stdin and stdout.
//! It exits when stdin closes, so it never outlives its parent.

mod admission;
mod answers;
mod app;
mod baseline;
mod budget;
mod cache;
mod compile_apart;
mod config;
mod engine;
mod executor;
mod guest_output;
mod host;
mod instances;
mod limits;
mod load_error;
mod load_pool;
mod lock;
mod log;
mod outbound;
mod protocol;
mod routes;
mod sandbox;
mod server;
mod slot;
mod spin_variables;
mod stats;
mod telemetry;
mod trace_context;
mod turns;
mod variables;

use serde_json::json;
use std::sync::Arc;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// Loads at once: two compile side by side (each with Cranelift's own threads), the rest queue.
const LOAD_THREADS: usize = 2;

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let apart = match compile_apart::parse(&mut args) {
        Some(Err(e)) => {
            eprintln!("{e}\n{}", config::USAGE);
            std::process::exit(2);
        }
        Some(Ok(wasm)) => Some(wasm),
        None => None,
    };
    let config = match config::Config::parse(args.iter().cloned()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}\n{}", config::USAGE);
            std::process::exit(2);
        }
    };
    // Before anything runs: a cache directory others could write to would hand them native
    // code in this process (cache.rs). Exit 2, as for a bad flag: a restart will not help.
    if let Err(e) = cache::prepare_dir(&config.cache_dir) {
        let err = format!("--cache-dir {}: {e}", config.cache_dir.display());
        log::error("refusing the cache directory", json!({ "err": err }));
        std::process::exit(2);
    }
    // The same trust as the cache directory: what it holds becomes native code here.
    let functions =
        config.functions_cache_dir.as_ref().map(|dir| {
            match cache::FunctionCache::open(dir, cache::FUNCTIONS_MAX_BYTES) {
                Ok(functions) => Arc::new(functions),
                Err(e) => {
                    let err = format!("--functions-cache-dir {}: {e}", dir.display());
                    log::error("refusing the cache directory", json!({ "err": err }));
                    std::process::exit(2);
                }
            }
        });
    if let Some(wasm) = apart {
        std::process::exit(compile_apart::run(&wasm, &config, functions));
    }
    // Before any request: with no OTEL_* endpoint this sets nothing up at all.
    telemetry::start();
    // Set here, so tokio reads no TOKIO_WORKER_THREADS from the environment.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(config.threads)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let code = runtime.block_on(run(config, functions, args));
    // The spans still queued leave before the process does.
    telemetry::shutdown();
    std::process::exit(code);
}

/// Why the worker cannot start (exit 1).
#[derive(Debug, thiserror::Error)]
enum StartError {
    #[error("engine: {0}")]
    Engine(wasmtime::Error),
    #[error("linker: {0}")]
    Linker(wasmtime::Error),
    #[error("baseline engine: {0}")]
    Baseline(wasmtime::Error),
    #[error("resolver: {0}")]
    Resolver(outbound::resolve::ResolverError),
}

/// `args`: the worker's flags, which its compile processes are given too.
async fn run(
    config: config::Config,
    functions: Option<Arc<cache::FunctionCache>>,
    args: Vec<String>,
) -> i32 {
    // Replies and events, one line each, written to stdout in the order they come.
    let (replies, mut outgoing) = tokio::sync::mpsc::unbounded_channel::<String>();
    let setup = || -> Result<protocol::Worker, StartError> {
        let engine = engine::engine(&config, functions.clone()).map_err(StartError::Engine)?;
        engine::start_ticker(&engine);
        let linkers = executor::Linkers::new(&engine).map_err(StartError::Linker)?;
        let cache = cache::ComponentCache::new(&config.cache_dir, engine, functions.clone());
        let names = outbound::resolve::Names::new(config.resolver).map_err(StartError::Resolver)?;
        let baseline = match config.baseline_first {
            true => Some(baseline::Baseline::new(args.clone()).map_err(StartError::Baseline)?),
            false => None,
        };
        let loader = slot::Loader {
            linkers,
            cache: Arc::new(cache),
            shared: app::Shared {
                policy: Arc::new(config.address_policy.clone()),
                names: Arc::new(names),
                budget: budget::Budget::new(config.memory_budget_bytes),
                instances: instances::Instances::new(config.max_instances),
                threads: config.threads,
            },
            pool: load_pool::LoadPool::new("load", LOAD_THREADS),
            events: replies.downgrade(),
            baseline,
        };
        Ok(protocol::Worker::new(
            loader,
            config.max_memory_bytes,
            u64::from(config.max_instances),
        ))
    };
    let worker = match setup() {
        Ok(w) => Arc::new(w),
        Err(e) => {
            log::error("cannot start", json!({"err": e.to_string()}));
            return 1;
        }
    };
    log::info("worker ready", json!({"pid": std::process::id()}));

    let writer = tokio::spawn(async move {
        let mut stdout = tokio::io::stdout();
        while let Some(mut line) = outgoing.recv().await {
            line.push('\n');
            if stdout.write_all(line.as_bytes()).await.is_err() || stdout.flush().await.is_err() {
                break;
            }
        }
    });
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    // Commands run side by side: a load that compiles does not hold up stats or others.
    while let Ok(Some(line)) = lines.next_line().await {
        if line.trim().is_empty() {
            continue;
        }
        let worker = worker.clone();
        let replies = replies.clone();
        tokio::spawn(async move {
            let _ = replies.send(worker.handle_line(&line).await);
        });
    }
    log::info("stdin closed, exiting", json!({}));
    drop(replies);
    let _ = tokio::time::timeout(std::time::Duration::from_secs(1), writer).await;
    0
}
