//! Spin's WAGI executor with wasip1 command modules written in WAT: the module's stdout is the
//! CGI response; a module that never ends is stopped at the deadline like a component.

mod common;

use common::{Worker, get};
use serde_json::json;
use std::path::PathBuf;

const HELLO: &str = r#"
(module
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 16) "status: 201 Created\ncontent-type: text/plain\n\nhello from wagi\n")
  (func (export "_start")
    (i32.store (i32.const 0) (i32.const 16))
    (i32.store (i32.const 4) (i32.const 62))
    (drop (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8)))))
"#;

const LOOPING: &str = r#"
(module
  (memory (export "memory") 1)
  (func (export "_start") (loop $forever (br $forever))))
"#;

fn module(name: &str, text: &str) -> PathBuf {
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}.wasm"));
    std::fs::write(&path, wat::parse_str(text).unwrap()).unwrap();
    path
}

fn wagi_lock(executor: serde_json::Value) -> serde_json::Value {
    json!({"spin_lock_version": 1,
        "triggers": [{"id": "t", "trigger_type": "http", "trigger_config": {"component": "cgi", "route": "/cgi/...", "executor": executor}}],
        "components": [{"id": "cgi", "source": {"content_type": "application/wasm"}}]})
}

#[test]
fn a_wasip1_command_answers_as_cgi() {
    let mut worker = Worker::start(&[]);
    let reply = worker.send(
        json!({"op": "load", "app": "wagi", "lock": wagi_lock(json!({"type": "wagi"})),
        "components": {"cgi": module("hello", HELLO)}}),
    );
    assert_eq!(reply["ok"], json!(true), "{reply}\n{}", worker.log());
    let url = reply["url"].as_str().unwrap();
    let answer = get(url, "/cgi/x?a=1");
    assert_eq!(
        (answer.status, answer.text().as_str()),
        (201, "hello from wagi\n")
    );
    assert!(
        answer
            .headers
            .to_ascii_lowercase()
            .contains("content-type: text/plain")
    );
    assert_eq!(get(url, "/other").status, 404);

    // The spin executor does not take a module, nor the wagi one a component.
    let reply = worker.send(
        json!({"op": "load", "app": "x", "lock": wagi_lock(json!({"type": "spin"})),
        "components": {"cgi": module("hello", HELLO)}}),
    );
    assert!(reply["error"].as_str().unwrap().contains("wagi"), "{reply}");
}

#[test]
fn a_wagi_module_that_never_ends_gets_504() {
    let mut worker = Worker::start(&[]);
    let reply = worker.send(
        json!({"op": "load", "app": "wagi", "lock": wagi_lock(json!({"type": "wagi"})),
        "components": {"cgi": module("wagi-loop", LOOPING)}, "limits": {"requestTimeoutMs": 300}}),
    );
    assert_eq!(reply["ok"], json!(true), "{reply}");
    assert_eq!(get(reply["url"].as_str().unwrap(), "/cgi").status, 504);
    let stats = worker.send(json!({"op": "stats"}));
    assert_eq!(stats["apps"]["wagi"]["timeouts"], json!(1), "{stats}");
}
