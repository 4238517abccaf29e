//! Components written in the component model's text format, so these run without the js
//! toolchain: a handler that never returns (the deadline), and one importing an interface
//! the worker does not give (refused at load, naming the import); and bytes that are no
//! component at all.

mod common;

use common::{Worker, get};
use serde_json::json;
use std::path::PathBuf;
use std::time::{Duration, Instant};

fn looping() -> String {
    common::http_component(
        r#"(func (export "handle") (param i32 i32)
      (loop $forever (br $forever)))"#,
    )
}

fn write_component(name: &str, text: &str) -> PathBuf {
    let bytes = wat::parse_str(text).expect("the component's text parses");
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}.wasm"));
    std::fs::write(&path, bytes).unwrap();
    path
}

#[test]
fn a_loop_is_stopped_at_the_deadline_and_its_core_freed() {
    let wasm = write_component("looping", &looping());
    let mut worker = Worker::start(&[]);
    let lock = json!({"spin_lock_version": 1,
        "triggers": [{"id": "t", "trigger_type": "http", "trigger_config": {"component": "spin", "route": "/..."}}],
        "components": [{"id": "spin", "source": {"content_type": "application/wasm"}}]});
    let reply = worker.send(
        json!({"op": "load", "app": "loop", "lock": lock, "components": {"spin": wasm},
        "limits": {"requestTimeoutMs": 500}}),
    );
    assert_eq!(reply["ok"], json!(true), "{reply}\n{}", worker.log());
    let url = reply["url"].as_str().unwrap().to_string();

    // More loops than cores, at once: each ends at its deadline.
    let started = Instant::now();
    let loops: Vec<_> = (0..4)
        .map(|_| {
            let url = url.clone();
            std::thread::spawn(move || get(&url, "/"))
        })
        .collect();
    for looping in loops {
        assert_eq!(looping.join().unwrap().status, 504);
    }
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    let stats = worker.send(json!({"op": "stats"}));
    assert_eq!(stats["apps"]["loop"]["timeouts"], json!(4), "{stats}");

    // The cores are free again: the process's CPU clock stands still.
    let cpu = common::cpu_ticks;
    let pid = worker_pid(&worker);
    std::thread::sleep(Duration::from_millis(300));
    let before = cpu(pid);
    std::thread::sleep(Duration::from_secs(1));
    let ticks = cpu(pid) - before;
    assert!(ticks < 20, "{ticks} clock ticks of CPU in an idle second");
}

fn worker_pid(worker: &Worker) -> u32 {
    let log = worker.log();
    let line = log.lines().find(|l| l.contains("worker ready")).unwrap();
    serde_json::from_str::<serde_json::Value>(line).unwrap()["pid"]
        .as_u64()
        .unwrap() as u32
}

#[test]
fn an_import_the_worker_does_not_give_fails_the_load() {
    let text = looping().replace(
        "(core module $m",
        "(import \"fermyon:spin/key-value@2.0.0\" (instance $kv (export \"open\" (func))))\n  (core module $m",
    );
    let wasm = write_component("kv", &text);
    let mut worker = Worker::start(&[]);
    let lock = json!({"spin_lock_version": 1,
        "triggers": [{"id": "t", "trigger_type": "http", "trigger_config": {"component": "spin", "route": "/..."}}],
        "components": [{"id": "spin", "source": {"content_type": "application/wasm"}}]});
    let reply =
        worker.send(json!({"op": "load", "app": "kv", "lock": lock, "components": {"spin": wasm}}));
    assert_eq!(reply["ok"], json!(false), "{reply}");
    assert!(
        reply["error"]
            .as_str()
            .unwrap()
            .contains("fermyon:spin/key-value@2.0.0"),
        "{reply}"
    );
}

#[test]
fn bytes_that_are_not_a_component_fail_the_load_and_leave_no_compiled_file() {
    // A cache of its own: what is in it after the refused load is this test's doing.
    let cache = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("not-wasm-cache");
    let _ = std::fs::remove_dir_all(&cache);
    std::fs::create_dir_all(&cache).unwrap();
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("not-wasm.wasm");
    std::fs::write(&path, b"this is not wasm").unwrap();
    let mut worker = Worker::start_with_cache(&cache, &[]);
    let lock = json!({"spin_lock_version": 1,
        "triggers": [{"id": "t", "trigger_type": "http", "trigger_config": {"component": "broken", "route": "/..."}}],
        "components": [{"id": "broken", "source": {"content_type": "application/wasm"}}]});
    let reply = worker
        .send(json!({"op": "load", "app": "broken", "lock": lock, "components": {"broken": path}}));
    assert_eq!(reply["ok"], json!(false), "{reply}");
    assert!(
        reply["error"].as_str().unwrap().contains("broken"),
        "the error names the component: {reply}"
    );
    assert_eq!(
        std::fs::read_dir(&cache).unwrap().count(),
        0,
        "neither a compiled file nor a temporary one is left"
    );
    let reply = worker.send(json!({"op": "stats"}));
    assert_eq!(reply["ok"], json!(true), "the worker goes on: {reply}");
}
