//! What each application costs, for the control plane's metrics and its accounting of CPU:
//! counters only, read with `stats`.

use serde_json::{Value, json};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

#[derive(Debug, Default)]
pub struct Stats {
    pub requests: AtomicU64,
    /// CPU time of the threads while they ran this application's instances.
    pub cpu_ns: AtomicU64,
    /// Wall time from instantiation to the end of the handler.
    pub wall_ns: AtomicU64,
    pub timeouts: AtomicU64,
    pub traps: AtomicU64,
    pub memory_refusals: AtomicU64,
    pub body_refusals: AtomicU64,
    pub response_cuts: AtomicU64,
    pub not_found: AtomicU64,
    /// Requests refused for their `Host` (`host.rs`).
    pub host_refusals: AtomicU64,
    /// Requests refused a turn (`admission.rs`): 429 past the queue, 503 after a wait as long as the deadline.
    pub busy_refusals: AtomicU64,
    /// Requests that found the instance pool full (`--max-instances`): 503.
    pub pool_refusals: AtomicU64,
    /// Requests refused memory by the worker's budget (`budget.rs`), not their own limit: 503.
    pub budget_refusals: AtomicU64,
    /// Outgoing requests refused for the caps on those in flight (`outbound/caps.rs`).
    pub outbound_refusals: AtomicU64,
}

impl Stats {
    pub fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Relaxed);
    }

    pub fn to_json(&self) -> Value {
        json!({
            "requests": self.requests.load(Relaxed),
            "cpuMs": self.cpu_ns.load(Relaxed) as f64 / 1e6,
            "wallMs": self.wall_ns.load(Relaxed) as f64 / 1e6,
            "timeouts": self.timeouts.load(Relaxed),
            "traps": self.traps.load(Relaxed),
            "memoryRefusals": self.memory_refusals.load(Relaxed),
            "bodyRefusals": self.body_refusals.load(Relaxed),
            "responseCuts": self.response_cuts.load(Relaxed),
            "notFound": self.not_found.load(Relaxed),
            "hostRefusals": self.host_refusals.load(Relaxed),
            "busyRefusals": self.busy_refusals.load(Relaxed),
            "poolRefusals": self.pool_refusals.load(Relaxed),
            "budgetRefusals": self.budget_refusals.load(Relaxed),
            "outboundRefusals": self.outbound_refusals.load(Relaxed),
        })
    }
}
