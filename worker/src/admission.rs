//! Each application's share of the worker: at most `max_running` of its requests hold an
//! instance at once, at most `max_waiting` more wait for a turn (in order of arrival), and the
//! next is refused at once (429) for that application alone. The instance pool is shared by
//! every application (`--max-instances`), so without this one application's flood took every
//! instance and the others' requests failed (issue 40). A waiting request holds no instance:
//! the turn is taken before the store is made.
//!
//! On the hot path a request that finds a turn free costs one compare-and-swap on the
//! semaphore (and one on the `Arc` the permit keeps); only a request that must wait counts
//! itself in `waiting`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

pub struct Admission {
    running: Arc<Semaphore>,
    max_running: usize,
    waiting: AtomicUsize,
    max_waiting: usize,
    /// The longest a request waits for its turn: the application's deadline.
    max_wait: Duration,
}

/// Why a request got no turn.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    /// `max_running` run and `max_waiting` wait already.
    Full,
    /// It waited `max_wait` without a turn coming.
    WaitedTooLong,
}

/// Holds its place in the queue; counted out however the wait ends (the client may go).
struct Waiting<'a>(&'a AtomicUsize);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Admission {
    pub fn new(max_running: usize, max_waiting: usize, max_wait: Duration) -> Self {
        Admission {
            running: Arc::new(Semaphore::new(max_running)),
            max_running,
            waiting: AtomicUsize::new(0),
            max_waiting,
            max_wait,
        }
    }

    /// A turn to run one instance, kept until the permit is dropped (the instance has ended).
    pub async fn admit(&self) -> Result<OwnedSemaphorePermit, Refused> {
        // Released permits go to the waiters first, so this never passes one in the queue.
        if let Ok(permit) = self.running.clone().try_acquire_owned() {
            return Ok(permit);
        }
        if self.waiting.fetch_add(1, Ordering::Relaxed) >= self.max_waiting {
            self.waiting.fetch_sub(1, Ordering::Relaxed);
            return Err(Refused::Full);
        }
        let _place = Waiting(&self.waiting);
        match tokio::time::timeout(self.max_wait, self.running.clone().acquire_owned()).await {
            Ok(Ok(permit)) => Ok(permit),
            // The semaphore is never closed; a timeout is the only other way out.
            _ => Err(Refused::WaitedTooLong),
        }
    }

    /// Requests holding a turn now.
    pub fn running(&self) -> usize {
        self.max_running - self.running.available_permits()
    }

    /// Requests waiting for a turn now.
    pub fn waiting(&self) -> usize {
        self.waiting.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn runs_then_waits_in_order_then_refuses() {
        let admission = Arc::new(Admission::new(2, 1, Duration::from_secs(60)));
        let first = admission.admit().await.unwrap();
        let _second = admission.admit().await.unwrap();
        let queued = tokio::spawn({
            let admission = admission.clone();
            async move { admission.admit().await.map(|_| ()) }
        });
        while admission.waiting() == 0 {
            tokio::task::yield_now().await;
        }
        assert_eq!(admission.admit().await.err(), Some(Refused::Full));
        drop(first);
        assert_eq!(queued.await.unwrap(), Ok(()));
        assert_eq!(admission.waiting(), 0);
    }

    #[tokio::test]
    async fn a_wait_ends_at_the_deadline() {
        // A deadline already past: the wait ends on the first poll that finds no turn.
        let admission = Admission::new(1, 5, Duration::ZERO);
        let _running = admission.admit().await.unwrap();
        assert_eq!(admission.admit().await.err(), Some(Refused::WaitedTooLong));
        assert_eq!(admission.waiting(), 0, "counted out");
    }
}
