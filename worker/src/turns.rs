//! Time on the serving threads, shared between applications rather than between requests
//! (issue 40). Every epoch tick (2 ms, `engine.rs`) a running guest gives its thread back; tokio then runs
//! the tasks in its queue in turn, one slice each. One application with a hundred requests in a
//! busy loop had a hundred tasks in that queue, so another application's request waited a
//! hundred slices, a second, for each of its own.
//!
//! So a guest that is still computing at a tick must hold one of its application's turns (as
//! many as the worker has threads) to go on: at the tick it goes to the back of tokio's queue,
//! holding its turn, then gives it to the next of its application's guests that waits for one
//! and queues behind them. An application's computing guests thus take one slice per round
//! between them, whatever their number, and a neighbour waits a slice or so. A request that
//! ends within its first slice (nearly all) never takes a turn; a guest that waits on I/O lets
//! go of its turn (`CpuCharged` sees it), so a turn is only held while computing.

use crate::stats::Stats;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use wasmtime::{Store, Trap, UpdateDeadline};

/// A guest's first slice: it is not stopped at a tick before this. Nearly every request ends
/// within it, and stopping them at every 2 ms tick cost 13% more CPU per request at
/// concurrency 32 (more instances alive at once, each a slot whose pages are cold); a guest
/// still computing past it is the kind the short slices are for.
const FIRST_SLICE: Duration = Duration::from_millis(10);

/// An application's turns: one per serving thread.
pub type Turns = Arc<Semaphore>;

pub fn turns(threads: usize) -> Turns {
    Arc::new(Semaphore::new(threads.max(1)))
}

/// One request's hold on its application's turns.
#[derive(Default)]
pub struct Held {
    permit: Mutex<Option<OwnedSemaphorePermit>>,
    /// The guest is between slices (at a tick), not waiting on I/O.
    at_tick: AtomicBool,
}

impl Held {
    fn release(&self) {
        self.permit.lock().unwrap_or_else(|e| e.into_inner()).take();
    }
}

/// Past its first slice, every tick the guest gives its thread back and, to go on, takes its
/// application's turn (above); past the deadline it traps wherever it is.
pub fn bound_in_time<T: 'static>(
    store: &mut Store<T>,
    deadline: Instant,
    turns: Turns,
    held: Arc<Held>,
) {
    let started = Instant::now();
    store.set_epoch_deadline(1);
    store.epoch_deadline_callback(move |_| {
        let now = Instant::now();
        if now >= deadline {
            return Err(Trap::Interrupt.into());
        }
        if now - started < FIRST_SLICE {
            return Ok(UpdateDeadline::Continue(1));
        }
        let (turns, held) = (turns.clone(), held.clone());
        held.at_tick.store(true, Ordering::Relaxed);
        Ok(UpdateDeadline::YieldCustom(
            1,
            Box::pin(async move {
                // To the back of the thread's queue first, the turn kept: each of the
                // application's slices lets every other task on the thread run.
                tokio::task::yield_now().await;
                held.release();
                // Released permits go to the waiters in order: this queues behind them.
                let permit = turns.acquire_owned().await.ok();
                *held.permit.lock().unwrap_or_else(|e| e.into_inner()) = permit;
                held.at_tick.store(false, Ordering::Relaxed);
            }),
        ))
    });
}

/// A future whose polls are charged to an application: the guest runs inside these polls
/// (on a fiber of the polling thread), so the thread's CPU clock around each poll is its cost.
/// A poll that ends with the guest waiting on I/O, not at a tick, lets go of its turn.
pub struct CpuCharged<F> {
    pub inner: Pin<Box<F>>,
    pub stats: Arc<Stats>,
    pub held: Arc<Held>,
}

impl<F: Future> Future for CpuCharged<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let before = thread_cpu_ns();
        let result = self.inner.as_mut().poll(cx);
        Stats::add(&self.stats.cpu_ns, thread_cpu_ns().saturating_sub(before));
        if result.is_pending() && !self.held.at_tick.load(Ordering::Relaxed) {
            self.held.release();
        }
        result
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
