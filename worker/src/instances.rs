//! `--max-instances` as the bound of every instance in the worker, whichever engine made it.
//! The pool (`engine.rs`) holds at most that many, but `--baseline-first` runs Winch's code in
//! an engine of its own whose instances come from wasmtime's on-demand allocator (a second
//! pool would reserve its address space for the process's life). The memory budget bounds
//! what their memories hold, not how many there are: several new applications flooded at once
//! made instances past the bound, each with its stack, tables and memory reservations.
//!
//! So each request's instance takes a place here before it is made, on either engine, and
//! gives it back after its store is dropped (with its pool slot): the count is never below
//! what the pool holds, the pool never runs out of component instances first, and a request
//! past the bound is answered as the full pool always was (503, `poolRefusals`). A count, not
//! a second bound for Winch's instances alone: that would let the two engines hold twice
//! `--max-instances` between them. It costs a request one compare-and-swap and one subtract.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

pub struct Instances {
    live: AtomicU32,
    max: u32,
}

/// One instance's place, given back when dropped.
pub struct Place(Arc<Instances>);

impl Instances {
    pub fn new(max: u32) -> Arc<Instances> {
        Arc::new(Instances {
            live: AtomicU32::new(0),
            max,
        })
    }

    /// A place for one more instance, or none when `max` are live.
    pub fn take(self: &Arc<Self>) -> Option<Place> {
        // Compare-and-swap rather than add-then-undo: a request that would exceed the bound
        // must not, for that moment, refuse another that fits.
        self.live
            .fetch_update(Relaxed, Relaxed, |live| {
                (live < self.max).then_some(live + 1)
            })
            .ok()
            .map(|_| Place(self.clone()))
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        self.0.live.fetch_sub(1, Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn past_the_bound_none_until_a_place_is_given_back() {
        let instances = Instances::new(2);
        let first = instances.take().unwrap();
        let _second = instances.take().unwrap();
        assert!(instances.take().is_none());
        drop(first);
        assert!(instances.take().is_some());
        assert_eq!(instances.live.load(Relaxed), 1, "the last place went back");
    }
}
