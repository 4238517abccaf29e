//! The worker's memory budget (`--memory-budget-bytes`): what every instance's linear memories
//! and every WAGI body together may hold (issue 40). Each application's own limit bounds one
//! instance; nothing bounded them all, and six requests of one application filling 3 GiB each
//! took the worker to 16 GB, where a smaller machine's kernel kills the worker and every tenant
//! with it.
//!
//! Memory is charged as it is taken (a memory created or grown, a body read), not at each
//! instance's limit: instances use a few MB of a 256 MiB limit, and charging the limit would
//! let fifty requests stand for the whole machine. A charge past the budget fails the growth
//! (the guest traps, the request answers 503 naming the budget) and the charge is given back
//! when the request's store is dropped.
//!
//! Shares: no application may hold more than three quarters of the budget, so one
//! application's hog always leaves the others a quarter; and while the budget is more than three
//! quarters used, an application may grow only within an even share of it (the budget over the
//! applications holding memory now), so several hogs split it rather than the first taking it.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};

pub struct Budget {
    limit: u64,
    used: AtomicU64,
    /// Applications holding any charge now (a count that may lag by a race, never for long).
    holders: AtomicI64,
}

/// One application's part of the budget.
#[derive(Default)]
pub struct Share {
    used: AtomicU64,
}

impl Share {
    pub fn used(&self) -> u64 {
        self.used.load(Relaxed)
    }
}

/// Why a charge was refused.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub enum Refusal {
    /// Every byte of the budget is taken.
    Exhausted,
    /// The budget is nearly taken and this application holds its share already.
    OverShare,
}

impl Budget {
    pub fn new(limit: u64) -> Arc<Budget> {
        Arc::new(Budget {
            limit,
            used: AtomicU64::new(0),
            holders: AtomicI64::new(0),
        })
    }

    pub fn limit(&self) -> u64 {
        self.limit
    }

    pub fn used(&self) -> u64 {
        self.used.load(Relaxed)
    }

    fn take(&self, share: &Share, bytes: u64) -> Result<(), Refusal> {
        let total = self.used.fetch_add(bytes, Relaxed) + bytes;
        if total > self.limit {
            self.used.fetch_sub(bytes, Relaxed);
            return Err(Refusal::Exhausted);
        }
        let before = share.used.fetch_add(bytes, Relaxed);
        if before == 0 {
            self.holders.fetch_add(1, Relaxed);
        }
        let holders = self.holders.load(Relaxed).max(1) as u64;
        let mine = before + bytes;
        let mark = self.limit / 4 * 3;
        if mine > mark || (total > mark && mine > self.limit / holders) {
            self.give_back(share, bytes);
            return Err(Refusal::OverShare);
        }
        Ok(())
    }

    fn give_back(&self, share: &Share, bytes: u64) {
        self.used.fetch_sub(bytes, Relaxed);
        if share.used.fetch_sub(bytes, Relaxed) == bytes {
            self.holders.fetch_sub(1, Relaxed);
        }
    }
}

/// What one request holds of the budget; all of it is given back when the charge is dropped
/// (with the request's store, or its WAGI bodies).
pub struct Charge {
    budget: Arc<Budget>,
    share: Arc<Share>,
    held: AtomicU64,
    refused: std::sync::Mutex<Option<Refusal>>,
}

impl Charge {
    pub fn new(budget: &Arc<Budget>, share: &Arc<Share>) -> Arc<Charge> {
        Arc::new(Charge {
            budget: budget.clone(),
            share: share.clone(),
            held: AtomicU64::new(0),
            refused: std::sync::Mutex::new(None),
        })
    }

    /// Takes `bytes` more, or says why not (and remembers it for the request's answer).
    pub fn take(&self, bytes: u64) -> Result<(), Refusal> {
        if bytes == 0 {
            return Ok(());
        }
        match self.budget.take(&self.share, bytes) {
            Ok(()) => {
                self.held.fetch_add(bytes, Relaxed);
                Ok(())
            }
            Err(refusal) => {
                *self.refused.lock().unwrap_or_else(|e| e.into_inner()) = Some(refusal);
                Err(refusal)
            }
        }
    }

    /// Why a charge of this request was refused, if one was.
    pub fn refused(&self) -> Option<Refusal> {
        *self.refused.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn budget(&self) -> u64 {
        self.budget.limit
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        let held = *self.held.get_mut();
        if held > 0 {
            self.budget.give_back(&self.share, held);
        }
    }
}

/// The default budget: half the machine's memory, leaving the rest to the control plane, the
/// builds and the kernel's page cache (which holds the compiled components' code).
pub fn default_limit() -> u64 {
    // SAFETY: sysconf reads two numbers and has no other effect.
    let (pages, page_size) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    if pages <= 0 || page_size <= 0 {
        return 4 << 30;
    }
    (pages as u64).saturating_mul(page_size as u64) / 2
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    #[test]
    fn a_charge_is_given_back_when_dropped() {
        let budget = Budget::new(100 * MIB);
        let share = Arc::new(Share::default());
        let charge = Charge::new(&budget, &share);
        charge.take(60 * MIB).unwrap();
        assert_eq!(budget.used(), 60 * MIB);
        drop(charge);
        assert_eq!(budget.used(), 0);
        assert_eq!(budget.holders.load(Relaxed), 0);
    }

    #[test]
    fn past_the_budget_is_refused_and_nothing_kept() {
        let budget = Budget::new(100 * MIB);
        let share = Arc::new(Share::default());
        let charge = Charge::new(&budget, &share);
        assert_eq!(charge.take(101 * MIB), Err(Refusal::Exhausted));
        assert_eq!(charge.refused(), Some(Refusal::Exhausted));
        assert_eq!(budget.used(), 0);
    }

    #[test]
    fn a_hog_leaves_a_quarter_to_a_neighbour() {
        let budget = Budget::new(100 * MIB);
        let hog = Arc::new(Share::default());
        let neighbour = Arc::new(Share::default());
        let first = Charge::new(&budget, &hog);
        // Alone, at most three quarters.
        assert_eq!(first.take(76 * MIB), Err(Refusal::OverShare));
        first.take(70 * MIB).unwrap();
        let small = Charge::new(&budget, &neighbour);
        small.take(MIB).unwrap();
        // Past three quarters with two holders: the hog is over its half.
        let second = Charge::new(&budget, &hog);
        assert_eq!(second.take(10 * MIB), Err(Refusal::OverShare));
        // The neighbour, under its half, may use what is left.
        small.take(28 * MIB).unwrap();
        assert_eq!(budget.used(), 99 * MIB);
        drop(small);
        // Alone again, the hog may grow to its three quarters.
        second.take(5 * MIB).unwrap();
        assert_eq!(second.take(MIB), Err(Refusal::OverShare));
        assert_eq!(budget.used(), 75 * MIB);
    }
}
