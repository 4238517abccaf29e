//! The worker: one process that serves every deployed Spin application of a machine, each on
//! its own loopback port, driven by its parent (the control plane) over stdin and stdout.

#![allow(dead_code)]

mod log;
mod outbound;
mod routes;
mod variables;

fn main() {}
