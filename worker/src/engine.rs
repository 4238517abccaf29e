//! The one engine every application shares (each executor links its kind: `executor/`).
//! Instances come from a pool with copy-on-write memory images, so a fresh instance per
//! request costs a few microseconds rather than a copy of the data segments; epoch
//! interruption lets a deadline stop a guest that never returns to the host.
//!
//! A freed slot keeps the pages its instance wrote, put back to the image's bytes in place
//! (found with Linux's PAGEMAP_SCAN), instead of handing them to `madvise`: the next instance
//! of the same component then writes without a page fault. Faults and `madvise` were most of a
//! js request's CPU, and with two threads in one address space each fault on a shared page and
//! each `madvise` interrupts the other core to flush its TLB, so requests side by side cost
//! twice the CPU each (bench/RESULTS.md). Without the ioctl (kernels before 6.7) the slot falls
//! back to `madvise`. Instance semantics do not change: every byte is reset before reuse.

use crate::cache::FunctionCache;
use crate::config::Config;
use std::sync::Arc;
use std::time::Duration;
use wasmtime::Enabled;
use wasmtime::{Engine, InstanceAllocationStrategy, PoolingAllocationConfig, Strategy};

/// Bytes of a freed memory slot kept resident, reset in place: more than the js template's
/// instance writes per request (about 1 MiB). The pages past it, or past what one scan
/// reports, go back to the kernel as before.
const MEMORY_KEEP_RESIDENT: usize = 2 << 20;
/// The same for tables, which instantiation fills lazily (a js component's funcref tables).
const TABLE_KEEP_RESIDENT: usize = 256 << 10;
/// Freed slots that keep their component's image and resident pages, all applications
/// together; past it a slot is reused for another component. This bounds what resident
/// slots hold to about 100 x (2 MiB + tables) however many applications are loaded.
const MAX_UNUSED_WARM_SLOTS: u32 = 100;

/// How often the epoch advances: the granularity of deadlines, and of the turns a running
/// guest gives other requests on its thread. 2 ms rather than 10: a neighbour's request
/// crosses the thread three times (its connection, its instance, its answer), each behind at
/// most one slice of a busy application, and with 10 ms slices its p50 beside thirty-two busy
/// loops was 28 ms against 3.5 alone, with 2 ms 6.8 (bench:noisy).
pub const EPOCH_TICK: Duration = Duration::from_millis(2);

/// `functions`: Cranelift takes the functions it compiled before from there (cache/functions.rs).
pub fn engine(config: &Config, functions: Option<Arc<FunctionCache>>) -> wasmtime::Result<Engine> {
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
        .max_memory_size(config.max_memory_bytes as usize)
        .pagemap_scan(Enabled::Auto)
        .linear_memory_keep_resident(MEMORY_KEEP_RESIDENT)
        .table_keep_resident(TABLE_KEEP_RESIDENT)
        .max_unused_warm_slots(MAX_UNUSED_WARM_SLOTS);
    let mut wasm = wasmtime::Config::new();
    wasm.allocation_strategy(InstanceAllocationStrategy::Pooling(pool))
        .memory_init_cow(true)
        .epoch_interruption(true)
        .wasm_component_model(true);
    if let Some(functions) = functions {
        wasm.enable_incremental_compilation(functions)?;
    }
    Engine::new(&wasm)
}

/// The engine of `--baseline-first`: Winch, wasmtime's single-pass compiler, which compiles a
/// 12 MB js component in a fraction of Cranelift's time into slower code. An application
/// whose components were never compiled answers from it while Cranelift compiles them
/// (`slot.rs`). A strategy is an engine's, so it is an engine of its own, and a component of
/// one engine links and instantiates only in that engine's stores: its instances come from
/// wasmtime's on-demand allocator, not the pool, since they serve only for those seconds and a
/// second pool would reserve its address space again for the process's life. They count
/// against `--max-instances` with the pool's all the same (`instances.rs`).
pub fn baseline_engine() -> wasmtime::Result<Engine> {
    let mut wasm = wasmtime::Config::new();
    wasm.strategy(Strategy::Winch)
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
