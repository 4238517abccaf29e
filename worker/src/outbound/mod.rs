//! Outgoing HTTP from components: the allow-list of the lock, then the address policy after
//! name resolution, then the connection itself (see `send`).

pub mod address;
pub mod allowed;
mod send;

pub use send::OutboundHooks;
