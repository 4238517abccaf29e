//! A freed instance slot is put back to its image in place, however scattered the pages its
//! instance wrote: the next request on it takes no page faults. wasmtime finds the dirty pages
//! with PAGEMAP_SCAN; its buffer held 32 regions, and past them the rest of the memory went to
//! madvise and faulted again on the next request (a js request writes more than 32; the
//! patched crate in scripts/worker-crates.sh, README.md "Patched crates").

mod common;

use common::{Worker, get, minor_faults};
use serde_json::json;
use std::path::PathBuf;

/// Pages written per request, each apart from the next: that many disjoint dirty regions.
const SCATTERED: u32 = 64;
const REQUESTS: u64 = 40;

/// Writes one byte into every other 4 KiB page of its 512 KiB memory, then returns without an
/// answer (the worker answers 500 for it); the memory has no data, so its image is zeros.
fn scattered_writer() -> String {
    common::http_component(&format!(
        r#"(memory 8)
    (func (export "handle") (param i32 i32)
      (local $i i32)
      (loop $next
        (i32.store8 (i32.mul (local.get $i) (i32.const 8192)) (i32.const 1))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br_if $next (i32.lt_u (local.get $i) (i32.const {SCATTERED})))))"#
    ))
}

#[test]
fn a_slot_reused_after_many_scattered_writes_takes_no_page_faults() {
    let bytes = wat::parse_str(scattered_writer()).expect("the component's text parses");
    let wasm = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("scattered.wasm");
    std::fs::write(&wasm, bytes).unwrap();
    let mut worker = Worker::start(&[]);
    let lock = json!({"spin_lock_version": 1,
        "triggers": [{"id": "t", "trigger_type": "http", "trigger_config": {"component": "spin", "route": "/..."}}],
        "components": [{"id": "spin", "source": {"content_type": "application/wasm"}}]});
    let reply = worker.send(
        json!({"op": "load", "app": "scattered", "lock": lock, "components": {"spin": wasm}}),
    );
    assert_eq!(reply["ok"], json!(true), "{reply}\n{}", worker.log());
    let url = reply["url"].as_str().unwrap().to_string();

    // One at a time, so each request takes the slot the one before freed; the first ones fill
    // the worker's own allocations and the slot's pages.
    let status = get(&url, "/").status;
    for _ in 0..10 {
        assert_eq!(get(&url, "/").status, status);
    }
    let before = minor_faults(worker.pid());
    for _ in 0..REQUESTS {
        assert_eq!(get(&url, "/").status, status);
    }
    let faults = minor_faults(worker.pid()) - before;
    // Each request rewrites 64 pages: reset in place, none faults; with the rest handed to
    // madvise, 32 a request would.
    assert!(
        faults < REQUESTS * 4,
        "{faults} page faults in {REQUESTS} requests that each wrote {SCATTERED} scattered pages"
    );
    worker.close();
}
