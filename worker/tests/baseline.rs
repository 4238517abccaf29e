//! --baseline-first: a component never compiled answers from Winch's code while Cranelift
//! compiles it on the worker's one optimizing thread, then the application moves to
//! Cranelift's code (its log line says so) and only Cranelift's form is in the cache.
//!
//! The optimizing thread is held by the order it works in, not by time: the first
//! application's wasm is a FIFO, read once by its load and again by its Cranelift build, which
//! waits there until the test writes the bytes again. The probe's Cranelift build queues
//! behind it, so every request before that write is answered by Winch's code.

mod common;

use common::{Worker, get, lock};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;

fn scratch(name: &str) -> PathBuf {
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("baseline-{name}"));
    let _ = std::fs::remove_dir_all(&path);
    let _ = std::fs::remove_file(&path);
    path
}

/// The text-format component that holds the optimizing thread: a handler that traps.
fn holder_bytes() -> Vec<u8> {
    wat::parse_str(common::http_component(
        r#"(func (export "handle") (param i32 i32) unreachable)"#,
    ))
    .unwrap()
}

/// Writes `bytes` to the FIFO once a reader opens it, on a thread of its own.
fn feed(fifo: &Path, bytes: Vec<u8>) -> std::thread::JoinHandle<()> {
    let fifo = fifo.to_path_buf();
    std::thread::spawn(move || std::fs::write(fifo, bytes).unwrap())
}

fn lines(worker: &Worker, msg: &str) -> Vec<Value> {
    worker
        .log()
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|line| line["msg"] == msg)
        .collect()
}

fn load(worker: &mut Worker, app: &str, component: &str, wasm: &Path) -> String {
    let reply = worker.send(json!({"op": "load", "app": app,
        "lock": lock(&[("/...", component)], json!({})), "components": {component: wasm}}));
    assert_eq!(reply["ok"], json!(true), "{reply}\n{}", worker.log());
    reply["url"].as_str().unwrap().to_string()
}

#[test]
fn a_new_component_answers_from_winch_then_moves_to_cranelift() {
    let cache = scratch("compiled");
    // Kept between runs: the probe's functions compile once per machine.
    let functions = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("baseline-functions-kept");
    let flags = [
        "--baseline-first",
        "--functions-cache-dir",
        functions.to_str().unwrap(),
    ];
    let mut worker = Worker::start_with_cache(&cache, &flags);

    let fifo = scratch("holder.fifo");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let fed = feed(&fifo, holder_bytes());
    load(&mut worker, "holder", "holder", &fifo);
    fed.join().unwrap();

    let probe = common::probe_wasm();
    let url = load(&mut worker, "probe", "probe", &probe);
    let winch = lines(&worker, "component compiled");
    assert!(
        winch.iter().all(|l| l["compiler"] == "winch") && winch.len() == 2,
        "both loads compiled by Winch alone: {}",
        worker.log()
    );
    // Answered while Cranelift has compiled nothing: its build of the holder waits at the FIFO.
    let first = get(&url, "/?name=greeting");
    assert_eq!(first.status, 200, "{}", first.text());
    assert!(first.json()["variable"].is_object(), "{}", first.text());
    assert!(
        lines(&worker, "application on Cranelift's code").is_empty(),
        "{}",
        worker.log()
    );
    let compiled_files = |dir: &Path| {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.ends_with(".cwasm"))
            .count()
    };
    assert_eq!(compiled_files(&cache), 0, "Winch's code is not cached");

    // The holder's bytes again: Cranelift builds it, then the probe, and each app moves.
    let fed = feed(&fifo, holder_bytes());
    assert!(until_line(&worker, "probe"), "{}", worker.log());
    fed.join().unwrap();
    let moved = lines(&worker, "application on Cranelift's code");
    assert!(
        moved
            .iter()
            .any(|l| l["app"] == "probe" && l["swapped"] == json!(true)),
        "{}",
        worker.log()
    );
    let cranelift: Vec<Value> = lines(&worker, "component compiled")
        .into_iter()
        .filter(|l| l["compiler"] == "cranelift")
        .collect();
    assert_eq!(cranelift.len(), 2, "{}", worker.log());
    assert_eq!(get(&url, "/?name=greeting").status, 200);
    assert_eq!(compiled_files(&cache), 2, "Cranelift's forms only");
    assert_eq!(worker.close().code(), Some(0));

    // A worker on the same cache maps Cranelift's file: Winch compiles nothing.
    let mut again = Worker::start_with_cache(&cache, &flags);
    let url = load(&mut again, "probe", "probe", &probe);
    assert_eq!(get(&url, "/").status, 200);
    assert!(
        lines(&again, "component compiled").is_empty(),
        "{}",
        again.log()
    );
    assert_eq!(again.close().code(), Some(0));
}

/// The line moving `app` to Cranelift's code, waited for as long as its compile may take
/// (the probe's: seconds to a minute under load), polling the log the worker writes.
fn until_line(worker: &Worker, app: &str) -> bool {
    let needle = json!(app);
    for _ in 0..3000 {
        if lines(worker, "application on Cranelift's code")
            .iter()
            .any(|l| l["app"] == needle)
        {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    false
}

#[test]
fn without_the_flag_a_load_waits_for_cranelift() {
    let cache = scratch("off");
    let wasm = scratch("off.wasm");
    std::fs::write(&wasm, holder_bytes()).unwrap();
    let mut worker = Worker::start_with_cache(&cache, &[]);
    load(&mut worker, "off", "off", &wasm);
    let compiles = lines(&worker, "component compiled");
    assert!(
        worker.log_has(r#""app":"off""#) && compiles.len() == 1,
        "{}",
        worker.log()
    );
    assert_eq!(compiles[0]["compiler"], "cranelift", "{}", worker.log());
    assert!(std::fs::read_dir(&cache).unwrap().count() == 1);
    assert_eq!(worker.close().code(), Some(0));
}
