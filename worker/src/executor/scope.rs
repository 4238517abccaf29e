//! What every run of an application's requests is held within, whichever its executor: the
//! application's bounds, its counters, its part of the worker's memory budget, its turns on
//! the serving threads and the worker's bound on instances. Apart from `App` so an executor needs nothing of the application
//! beyond it (the application is built from its executors, not the other way round).

use crate::budget::{Budget, Charge, Share};
use crate::instances::Instances;
use crate::limits::Limits;
use crate::stats::Stats;
use crate::turns::Turns;
use std::sync::Arc;

pub struct Scope {
    pub id: Arc<str>,
    pub limits: Limits,
    pub stats: Arc<Stats>,
    /// The worker's memory budget, and this application's part of it (`budget.rs`).
    pub budget: Arc<Budget>,
    pub share: Arc<Share>,
    /// Its turns on the serving threads while computing (`turns.rs`).
    pub turns: Turns,
    /// The worker's places for instances, of both engines (`instances.rs`).
    pub instances: Arc<Instances>,
}

impl Scope {
    /// One request's charge to the budget, given back when the last of its holders goes.
    pub fn charge(&self) -> Arc<Charge> {
        Charge::new(&self.budget, &self.share)
    }
}
