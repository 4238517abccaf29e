//! What an instance gets from the machine: nothing but a clock, randomness and its own
//! captured output. No preopened directory, no environment, no arguments, no sockets (TCP,
//! UDP and name lookup off, and every address refused should one be asked for). Outgoing HTTP
//! goes through `outbound`, which enforces the lock's allow-list.

use crate::guest_output::GuestOutput;
use crate::limits::MemoryLimiter;
use crate::outbound::OutboundHooks;
use crate::variables::ComponentVariables;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

/// WASI with nothing of the machine: no directory, environment or argument, and no socket
/// (TCP, UDP and name lookup off, every address refused). Both executors start from it.
pub fn closed_wasi() -> WasiCtxBuilder {
    let mut builder = WasiCtx::builder();
    builder
        .allow_tcp(false)
        .allow_udp(false)
        .allow_ip_name_lookup(false)
        .socket_addr_check(|_, _| Box::pin(async { false }));
    builder
}

/// The data of one request's wasi:http store.
pub struct Host {
    wasi: WasiCtx,
    http: WasiHttpCtx,
    table: ResourceTable,
    hooks: OutboundHooks,
    pub limiter: MemoryLimiter,
    pub variables: ComponentVariables,
}

impl Host {
    pub fn new(
        hooks: OutboundHooks,
        limiter: MemoryLimiter,
        variables: ComponentVariables,
        stdout: GuestOutput,
        stderr: GuestOutput,
    ) -> Self {
        let wasi = closed_wasi().stdout(stdout).stderr(stderr).build();
        Host {
            wasi,
            http: WasiHttpCtx::new(),
            table: ResourceTable::new(),
            hooks,
            limiter,
            variables,
        }
    }
}

impl WasiView for Host {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl WasiHttpView for Host {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView {
            ctx: &mut self.http,
            table: &mut self.table,
            hooks: &mut self.hooks,
        }
    }
}
