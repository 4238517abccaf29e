//! What each application costs, for the control plane's metrics and its accounting of CPU:
//! counters only, read with `stats`.

use serde_json::{Value, json};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::task::{Context, Poll};

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
        })
    }
}

fn thread_cpu_ns() -> u64 {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes only the timespec it is given.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    if rc != 0 {
        return 0;
    }
    now.tv_sec as u64 * 1_000_000_000 + now.tv_nsec as u64
}

/// A future whose polls are charged to an application: the guest runs inside these polls
/// (on a fiber of the polling thread), so the thread's CPU clock around each poll is its cost.
pub struct CpuCharged<F> {
    pub inner: Pin<Box<F>>,
    pub stats: Arc<Stats>,
}

impl<F: Future> Future for CpuCharged<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let before = thread_cpu_ns();
        let result = self.inner.as_mut().poll(cx);
        Stats::add(&self.stats.cpu_ns, thread_cpu_ns().saturating_sub(before));
        result
    }
}
