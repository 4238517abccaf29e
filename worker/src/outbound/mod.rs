//! Outgoing HTTP from components: the allow-list of the lock, then the address policy after
//! name resolution, then the connection itself (see `send`).

pub mod address;
pub mod allowed;
pub mod caps;
pub mod resolve;
mod send;

pub use send::{Outbound, OutboundHooks};
