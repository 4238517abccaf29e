//! The one engine every application shares, and the linker every component is linked with.
//! Instances come from a pool with copy-on-write memory images, so a fresh instance per
//! request costs a few microseconds rather than a copy of the data segments; epoch
//! interruption lets a deadline stop a guest that never returns to the host.

use crate::config::Config;
use crate::sandbox::Host;
use std::time::Duration;
use wasmtime::component::Linker;
use wasmtime::{Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

/// How often the epoch advances: the granularity of deadlines, and of the turns a running
/// guest gives other requests on its thread.
pub const EPOCH_TICK: Duration = Duration::from_millis(10);

pub fn engine(config: &Config) -> wasmtime::Result<Engine> {
    let instances = config.max_instances;
    let mut pool = PoolingAllocationConfig::default();
    // A componentize-js component holds a handful of core instances, memories and tables;
    // the per-component bounds leave room for bigger ones, the totals bound the whole pool.
    pool.total_component_instances(instances)
        .total_core_instances(instances.saturating_mul(8))
        .total_memories(instances.saturating_mul(2))
        .total_tables(instances.saturating_mul(4))
        .total_stacks(instances)
        .max_core_instances_per_component(64)
        .max_memories_per_component(16)
        .max_tables_per_component(32)
        .max_memories_per_module(2)
        .max_tables_per_module(4)
        .table_elements(100_000)
        .max_component_instance_size(4 << 20)
        .max_core_instance_size(4 << 20)
        .max_memory_size(config.max_memory_bytes as usize);
    let mut wasm = wasmtime::Config::new();
    wasm.allocation_strategy(InstanceAllocationStrategy::Pooling(pool))
        .memory_init_cow(true)
        .epoch_interruption(true)
        .wasm_component_model(true);
    Engine::new(&wasm)
}

/// Advances the engine's epoch for as long as the process lives.
pub fn start_ticker(engine: &Engine) {
    let engine = engine.weak();
    std::thread::Builder::new()
        .name("epoch".into())
        .spawn(move || {
            while let Some(engine) = engine.upgrade() {
                engine.increment_epoch();
                drop(engine);
                std::thread::sleep(EPOCH_TICK);
            }
        })
        .expect("a thread for the epoch ticker");
}

/// WASI 0.2 (its sandbox is `sandbox::Host`), wasi:http and Spin's variables.
pub fn linker(engine: &Engine) -> wasmtime::Result<Linker<Host>> {
    let mut linker = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
    wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker)?;
    crate::spin_variables::add_to_linker(&mut linker)?;
    Ok(linker)
}
