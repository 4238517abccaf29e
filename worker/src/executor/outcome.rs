//! How an instance's run ended, told once for both executors (wasi-http and WAGI): what
//! stopped it, how it is counted and logged, and what the caller is answered.

use super::scope::Scope;
use crate::answers::{self, Body};
use crate::limits::{Limits, MemoryLimiter};
use crate::log;
use crate::telemetry::RequestSpan;
use http::Response;
use serde_json::json;
use wasmtime::{PoolConcurrencyLimitError, Trap};

pub enum Outcome {
    Done,
    Timeout,
    /// Its memories reached the application's `memoryBytes`.
    MemoryLimit,
    /// The worker's memory budget refused it more (`budget.rs`).
    MemoryBudget,
    /// No place for an instance (`--max-instances`, all applications and both engines
    /// together: `instances.rs`), or none of the pool's other totals left.
    PoolFull,
    Trap(String),
}

/// The outcome as a request's span names it (`telemetry/span.rs`): both memory refusals are
/// `memory`, the pool's is the worker's `refused`.
pub fn name(outcome: &Outcome) -> &'static str {
    match outcome {
        Outcome::Done => "ok",
        Outcome::Timeout => "deadline",
        Outcome::MemoryLimit | Outcome::MemoryBudget => "memory",
        Outcome::PoolFull => "refused",
        Outcome::Trap(_) => "trap",
    }
}

/// How a run that failed ended: the instance may not have started (the pool is full).
pub fn failure(e: &wasmtime::Error, limiter: &MemoryLimiter) -> Outcome {
    if e.downcast_ref::<Trap>() == Some(&Trap::Interrupt) {
        Outcome::Timeout
    } else if e.downcast_ref::<PoolConcurrencyLimitError>().is_some() {
        Outcome::PoolFull
    } else if limiter.refused {
        Outcome::MemoryLimit
    } else if limiter.charge.refused().is_some() {
        Outcome::MemoryBudget
    } else {
        Outcome::Trap(format!("{e:?}"))
    }
}

/// Counts and logs a run that did not end well; puts how it ended on its span.
pub fn record(scope: &Scope, component: &str, outcome: &Outcome, span: Option<&RequestSpan>) {
    if let Some(span) = span {
        span.ended(name(outcome));
    }
    let (counter, what, detail) = match outcome {
        Outcome::Done => return,
        Outcome::Timeout => (&scope.stats.timeouts, "deadline", None),
        Outcome::MemoryLimit => (&scope.stats.memory_refusals, "memory limit", None),
        Outcome::MemoryBudget => (&scope.stats.budget_refusals, "memory budget", None),
        Outcome::PoolFull => (&scope.stats.pool_refusals, "instance pool full", None),
        Outcome::Trap(e) => (&scope.stats.traps, "trap", Some(e.as_str())),
    };
    crate::stats::Stats::add(counter, 1);
    log::warn(
        "the instance was stopped",
        json!({"app": &*scope.id, "component": component, "reason": what, "err": detail}),
    );
}

/// The answer for a run that ended without one of its own; `None` when it is done.
pub fn answer(outcome: &Outcome, limits: &Limits, budget: u64) -> Option<Response<Body>> {
    Some(match outcome {
        Outcome::Done => return None,
        Outcome::Timeout => answers::timed_out(limits.request_timeout),
        Outcome::PoolFull => answers::pool_full(),
        Outcome::MemoryBudget => answers::budget_in_use(budget),
        Outcome::MemoryLimit | Outcome::Trap(_) => answers::failed(),
    })
}
