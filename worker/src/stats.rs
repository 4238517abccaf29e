//! What each application costs, for the control plane's metrics and its accounting of CPU:
//! counters only, read with `stats`.

use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Upper bounds of the latency buckets, in microseconds: 0.25 ms doubling to 32.768 s, then
/// one bucket past the last. Doubling keeps a p95 within a factor of two with 19 counters per
/// component (the control plane keeps every step's counts, so each bucket costs it storage);
/// the boundaries are the control plane's too (control/src/local/metrics-store.ts).
pub const LATENCY_BOUNDS_US: [u64; 18] = [
    250, 500, 1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 64_000, 128_000, 256_000, 512_000,
    1_024_000, 2_048_000, 4_096_000, 8_192_000, 16_384_000, 32_768_000,
];

/// One component's requests as its callers saw them: how long until the response's head,
/// counted per bucket, and how many were answered 5xx. A request is one `fetch_add` (two
/// when it failed): this is on every request's path.
#[derive(Debug, Default)]
pub struct ComponentStats {
    latency: [AtomicU64; LATENCY_BOUNDS_US.len() + 1],
    errors: AtomicU64,
}

impl ComponentStats {
    pub fn observe(&self, elapsed: Duration, server_error: bool) {
        let us = elapsed.as_micros().min(u64::MAX as u128) as u64;
        let bucket = LATENCY_BOUNDS_US.partition_point(|&bound| bound < us);
        self.latency[bucket].fetch_add(1, Relaxed);
        if server_error {
            self.errors.fetch_add(1, Relaxed);
        }
    }

    fn to_json(&self) -> Value {
        let latency: Vec<u64> = self.latency.iter().map(|c| c.load(Relaxed)).collect();
        json!({"latency": latency, "errors": self.errors.load(Relaxed)})
    }
}

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
    /// Per component id, kept across versions of the application (a redeploy does not reset
    /// them): taken once per component at each load, never on a request's path.
    components: Mutex<HashMap<Arc<str>, Arc<ComponentStats>>>,
}

impl Stats {
    pub fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Relaxed);
    }

    pub fn component(&self, id: &Arc<str>) -> Arc<ComponentStats> {
        let mut components = self.components.lock().unwrap_or_else(|e| e.into_inner());
        components.entry(id.clone()).or_default().clone()
    }

    pub fn to_json(&self) -> Value {
        let components: Map<String, Value> = self
            .components
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|(id, c)| (id.to_string(), c.to_json()))
            .collect();
        json!({
            "components": components,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_falls_in_the_bucket_whose_bound_is_the_first_at_or_above_it() {
        let stats = Stats::default();
        let c = stats.component(&Arc::from("a"));
        c.observe(Duration::from_micros(100), false);
        c.observe(Duration::from_micros(250), false);
        c.observe(Duration::from_micros(251), true);
        c.observe(Duration::from_millis(3), false);
        c.observe(Duration::from_secs(60), true);
        let json = stats.to_json();
        let a = &json["components"]["a"];
        let latency: Vec<u64> = serde_json::from_value(a["latency"].clone()).unwrap();
        assert_eq!(latency.len(), 19);
        assert_eq!(latency[0], 2);
        assert_eq!(latency[1], 1);
        assert_eq!(latency[4], 1);
        assert_eq!(latency[18], 1);
        assert_eq!(a["errors"], 2);
        // The same id is the same counters: a new version of the application keeps them.
        stats
            .component(&Arc::from("a"))
            .observe(Duration::ZERO, false);
        assert_eq!(stats.to_json()["components"]["a"]["latency"][0], 3);
    }
}
