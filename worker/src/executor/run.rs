//! One request's instance, set up and run the same way whichever its executor: a fresh store
//! whose memories are bounded by the application's limit and charged to the worker's budget,
//! whose guest is stopped at the deadline and takes its application's turns past its first
//! slice, run on a task of its own whose CPU is charged to the application, its instance made
//! only within the worker's bound on instances (`instances.rs`). How the run ended is
//! classified here too, once (`outcome.rs`).

use super::outcome::{Outcome, failure};
use super::scope::Scope;
use crate::budget::Charge;
use crate::instances::Instances;
use crate::limits::MemoryLimiter;
use crate::stats::Stats;
use crate::telemetry::RequestSpan;
use crate::turns::{CpuCharged, Held, bound_in_time};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;
use wasmtime::{Engine, Store};

/// A store's data that holds its memory limiter (each executor's host data).
pub trait Limited: Send + 'static {
    fn limiter(&self) -> &MemoryLimiter;
    fn limiter_mut(&mut self) -> &mut MemoryLimiter;
}

/// What the executor does with the store: instantiate, then call its entry point.
pub type Call<T> = Box<
    dyn for<'s> FnOnce(
            &'s mut Store<T>,
        ) -> Pin<Box<dyn Future<Output = wasmtime::Result<()>> + Send + 's>>
        + Send,
>;

/// A request's store, bounded in memory and time, not yet run.
pub struct Sandbox<T: 'static> {
    pub store: Store<T>,
    deadline: Instant,
    held: Arc<Held>,
    stats: Arc<Stats>,
    span: Option<RequestSpan>,
    instances: Arc<Instances>,
}

/// Sets the request's store up (counted as one of the application's requests): `data` gets the
/// memory limiter its store must hold, charging `charge` (the WAGI bodies share it).
pub fn sandbox<T: Limited>(
    scope: &Scope,
    span: Option<RequestSpan>,
    engine: &Engine,
    charge: Arc<Charge>,
    data: impl FnOnce(MemoryLimiter) -> T,
) -> Sandbox<T> {
    let limits = scope.limits;
    let deadline = Instant::now() + limits.request_timeout;
    let held = Arc::new(Held::default());
    let mut store = Store::new(
        engine,
        data(MemoryLimiter::new(limits.memory_bytes, charge)),
    );
    store.limiter(|data| data.limiter_mut());
    bound_in_time(&mut store, deadline, scope.turns.clone(), held.clone());
    Stats::add(&scope.stats.requests, 1);
    Sandbox {
        store,
        deadline,
        held,
        stats: scope.stats.clone(),
        span,
        instances: scope.instances.clone(),
    }
}

impl<T: Limited> Sandbox<T> {
    /// Runs the instance on a task of its own, started now; the future gives how it ended,
    /// once its store is dropped (off the serving thread when it holds much memory).
    pub fn run(self, call: Call<T>) -> impl Future<Output = Outcome> + Send + 'static {
        let Sandbox {
            mut store,
            deadline,
            held,
            stats,
            span,
            instances,
        } = self;
        let charged = stats.clone();
        let run = async move {
            // Before the instance is made, on either engine: Winch's are not in the pool.
            let Some(place) = instances.take() else {
                return Outcome::PoolFull;
            };
            let started = Instant::now();
            // The epoch stops a guest that computes; this stops one that waits (on I/O).
            let result = tokio::time::timeout_at(deadline.into(), call(&mut store)).await;
            let guest = started.elapsed();
            Stats::add(&stats.wall_ns, guest.as_nanos() as u64);
            if let Some(span) = &span {
                span.guest(guest);
            }
            let outcome = match result {
                Err(_) => Outcome::Timeout,
                Ok(Ok(())) => Outcome::Done,
                Ok(Err(e)) => failure(&e, store.data().limiter()),
            };
            let used = store.data().limiter().used;
            // The place after the store (a tuple drops in order), so it is never free while
            // the store still holds its pool slot.
            crate::limits::release((store, place), used);
            outcome
        };
        let task = tokio::spawn(CpuCharged {
            inner: Box::pin(run),
            stats: charged,
            held,
        });
        async move { task.await.unwrap_or_else(|e| Outcome::Trap(e.to_string())) }
    }
}
