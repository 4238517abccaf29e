//! --baseline-first: a component never compiled answers from Winch's code while Cranelift
//! compiles it in a process of its own at the lowest priority, one at a time, then the
//! application moves to Cranelift's code (its log line says so) and only Cranelift's form is in
//! the cache.
//!
//! The optimizing is held by the order it works in, not by time: the first application's wasm
//! is a FIFO, read once by its load, again by its compile process, which waits there until the
//! test writes the bytes again, and a third time by the worker to map what was compiled. The
//! probe's Cranelift build queues behind it, so every request before that write is answered by
//! Winch's code.

mod common;

use common::held::{answered, held_echo, read_all, until};
use common::{Worker, get, lock};
use serde_json::{Value, json};
use std::io::Write;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

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

/// Loads the holder from a FIFO named `name`: Cranelift's build of it, and every one queued
/// behind it, waits until the holder's bytes are fed to the FIFO again.
fn hold_optimizer(worker: &mut Worker, name: &str) -> PathBuf {
    let fifo = scratch(name);
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let fed = feed(&fifo, holder_bytes());
    load(worker, "holder", "holder", &fifo);
    fed.join().unwrap();
    fifo
}

/// Lets the holder's Cranelift build go: its compile process reads the FIFO, then the worker.
/// One after the other: two writers at once would hand one reader both.
fn release_optimizer(worker: &Worker, fifo: &Path) -> std::thread::JoinHandle<()> {
    feed(fifo, holder_bytes()).join().unwrap();
    // Its line comes once it has read the FIFO to the end and closed it.
    assert!(
        eventually(|| !cranelift_compiles(worker).is_empty()),
        "{}",
        worker.log()
    );
    feed(fifo, holder_bytes())
}

fn cranelift_compiles(worker: &Worker) -> Vec<Value> {
    lines(worker, "component compiled")
        .into_iter()
        .filter(|l| l["compiler"] == "cranelift")
        .collect()
}

/// Whether `done` comes true while a compile may take (seconds to a minute under load),
/// polling what the worker writes.
fn eventually(done: impl Fn() -> bool) -> bool {
    for _ in 0..3000 {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
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
    load_with(worker, app, component, wasm, json!({}))
}

fn load_with(
    worker: &mut Worker,
    app: &str,
    component: &str,
    wasm: &Path,
    limits: Value,
) -> String {
    let reply = worker.send(json!({"op": "load", "app": app, "limits": limits,
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
    let fifo = hold_optimizer(&mut worker, "holder.fifo");

    let probe = common::probe_wasm();
    let url = load(&mut worker, "probe", "probe", &probe);
    // The log reaches the test on another thread: the load's own line comes after its compile's.
    assert!(worker.log_has(r#""app":"probe""#), "{}", worker.log());
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
    let fed = release_optimizer(&worker, &fifo);
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
    assert_eq!(cranelift_compiles(&worker).len(), 2, "{}", worker.log());
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

/// The line moving `app` to Cranelift's code.
fn until_line(worker: &Worker, app: &str) -> bool {
    let needle = json!(app);
    eventually(|| {
        lines(worker, "application on Cranelift's code")
            .iter()
            .any(|l| l["app"] == needle)
    })
}

/// The fields of `/proc/PID/stat` after the command's name: state is the first, as `stat(5)`
/// numbers them from 3.
fn stat_fields(pid: u64) -> Vec<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let (_, rest) = stat.rsplit_once(')').unwrap();
    rest.split_whitespace().map(String::from).collect()
}

/// The nice of `/proc/PID/autogroup` (`/autogroup-2814 nice 19`), when the kernel has them.
fn autogroup_nice(pid: u64) -> Option<i64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/autogroup")).ok()?;
    text.split_whitespace().last()?.parse().ok()
}

/// A worker whose compile process waits at the holder's FIFO `name`, and that process's pid.
fn compile_waiting(name: &str) -> (Worker, PathBuf, u64) {
    let mut worker = Worker::start_with_cache(&scratch(name), &["--baseline-first"]);
    let fifo = hold_optimizer(&mut worker, &format!("{name}.fifo"));
    assert!(
        eventually(|| !lines(&worker, "compiling apart").is_empty()),
        "{}",
        worker.log()
    );
    let child = lines(&worker, "compiling apart")[0]["pid"].as_u64();
    (worker, fifo, child.unwrap())
}

/// Cranelift's background compile is a child process in a session of its own at nice 19, its
/// autogroup at 19 too: the kernel shares the CPU between sessions first, so a build beside it
/// (each step in its session) gets the machine, where a thread's nice alone gave it half. The
/// worker's own priority is left alone. Read from the kernel while the child waits at the FIFO.
#[test]
fn cranelift_compiles_in_a_session_of_its_own_at_the_lowest_priority() {
    let (worker, fifo, child) = compile_waiting("apart");
    let worker_pid = u64::from(worker.pid());
    let fields = stat_fields(child);
    // stat(5): ppid is field 4, session 6, nice 19.
    assert_eq!(fields[1], worker_pid.to_string(), "the worker's child");
    assert_eq!(fields[3], child.to_string(), "a session of its own");
    assert_eq!(fields[16], "19", "its nice");
    let worker_fields = stat_fields(worker_pid);
    assert_ne!(worker_fields[3], fields[3]);
    let own = stat_fields(u64::from(std::process::id()));
    assert_eq!(worker_fields[16], own[16], "the worker's own is left alone");
    if let Some(nice) = autogroup_nice(child) {
        assert_eq!(nice, 19, "its autogroup's");
        assert_eq!(
            autogroup_nice(worker_pid),
            autogroup_nice(u64::from(std::process::id()))
        );
    }

    let fed = release_optimizer(&worker, &fifo);
    assert!(until_line(&worker, "holder"), "{}", worker.log());
    fed.join().unwrap();
    assert_eq!(worker.close().code(), Some(0));
}

/// The compile process exits when the worker goes, its stdin closed: killed outright here,
/// while the compile waits at the FIFO.
#[test]
fn a_compile_process_ends_with_its_worker() {
    let (worker, _fifo, child) = compile_waiting("orphan");
    drop(worker);
    // Gone once reaped, a zombie until then.
    let ended = || {
        std::fs::read_to_string(format!("/proc/{child}/stat"))
            .map_or(true, |_| stat_fields(child)[0] == "Z")
    };
    assert!(eventually(ended), "the compile process outlived its worker");
}

#[test]
fn without_the_flag_a_load_waits_for_cranelift() {
    let cache = scratch("off");
    let wasm = scratch("off.wasm");
    std::fs::write(&wasm, holder_bytes()).unwrap();
    let mut worker = Worker::start_with_cache(&cache, &[]);
    load(&mut worker, "off", "off", &wasm);
    // Waited for before the compiles are read: the load's line comes after its compile's.
    assert!(worker.log_has(r#""app":"off""#), "{}", worker.log());
    let compiles = lines(&worker, "component compiled");
    assert_eq!(compiles.len(), 1, "{}", worker.log());
    assert_eq!(compiles[0]["compiler"], "cranelift", "{}", worker.log());
    assert!(std::fs::read_dir(&cache).unwrap().count() == 1);
    assert_eq!(worker.close().code(), Some(0));
}

/// `--max-instances` bounds the instances of Winch's code, which come from no pool, as it does
/// the pool's, and both engines' together: a request past it on either is answered as the full
/// pool (503, `poolRefusals`). Held requests (`common/held.rs`) keep the instances live.
#[test]
fn max_instances_bounds_winch_instances_and_cranelift_ones_beside_them() {
    let cache = scratch("bound");
    let functions =
        PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("baseline-bound-functions-kept");
    let flags = [
        "--baseline-first",
        "--max-instances",
        "3",
        "--functions-cache-dir",
        functions.to_str().unwrap(),
    ];
    let mut worker = Worker::start_with_cache(&cache, &flags);
    let fifo = hold_optimizer(&mut worker, "bound.fifo");
    let probe = common::probe_wasm();
    // Held past Cranelift's compile of the probe, which may take longer than the default 30 s.
    let limits = json!({"requestTimeoutMs": 600_000});
    let urls =
        ["one", "two"].map(|app| load_with(&mut worker, app, "probe", &probe, limits.clone()));
    assert!(
        lines(&worker, "component compiled")
            .iter()
            .all(|l| l["compiler"] == "winch"),
        "{}",
        worker.log()
    );

    // Four instances of Winch's code asked for, two per application (within each one's turns),
    // where three may be: one is refused, whichever came last.
    let mut held: Vec<TcpStream> = urls
        .iter()
        .flat_map(|url| [held_echo(url), held_echo(url)])
        .collect();
    let total = |stats: &Value, field: &str| {
        ["one", "two"]
            .iter()
            .map(|app| stats["apps"][app][field].as_u64().unwrap())
            .sum::<u64>()
    };
    until(&mut worker, |s| {
        total(s, "running") == 3 && total(s, "poolRefusals") == 1
    });
    let mut refused = None;
    for _ in 0..600 {
        refused = (0..held.len()).find(|&i| answered(&mut held[i]));
        if refused.is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let answer = read_all(&mut held.remove(refused.expect("the refused one is answered")));
    assert!(answer.starts_with("HTTP/1.1 503 "), "{answer}");
    assert!(
        answer
            .to_ascii_lowercase()
            .contains("\r\nretry-after: 1\r\n"),
        "{answer}"
    );
    assert_eq!(get(&urls[0], "/").status, 503, "a fifth, on Winch's code");

    // Cranelift's code, beside the three instances of Winch's still held: the pool is empty,
    // but the bound is the worker's.
    let fed = release_optimizer(&worker, &fifo);
    assert!(
        until_line(&worker, "one") && until_line(&worker, "two"),
        "{}",
        worker.log()
    );
    fed.join().unwrap();
    let swapped = lines(&worker, "application on Cranelift's code")
        .into_iter()
        .filter(|l| l["app"] != "holder" && l["swapped"] == json!(true))
        .count();
    assert_eq!(
        swapped,
        2,
        "both serve Cranelift's code now: {}",
        worker.log()
    );
    let answer = get(&urls[1], "/");
    assert_eq!(answer.status, 503, "{}", answer.text());
    let stats = worker.send(json!({"op": "stats"}));
    assert_eq!(total(&stats, "poolRefusals"), 3, "{stats}");

    // The held ones end well, and their places are given back.
    for stream in &mut held {
        stream.write_all(b"67890").unwrap();
        let answer = read_all(stream);
        assert!(answer.starts_with("HTTP/1.1 200 "), "{answer}");
        assert!(answer.ends_with("bytes 10"), "{answer}");
    }
    // Their stores dropped (their memories given back), their places with them: `running`
    // would say nothing here, it counts the turns of the versions on Cranelift's code.
    until(&mut worker, |s| s["memoryBudget"]["usedBytes"] == json!(0));
    for url in &urls {
        assert_eq!(get(url, "/").status, 200, "instances free again");
    }
    assert_eq!(worker.close().code(), Some(0));
}
