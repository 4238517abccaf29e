//! Compiled functions reused by content (--functions-cache-dir): a second build of a
//! component that changed one function compiles that one and takes the rest from the cache, in
//! this worker and in the next one started on the same directory; without the flag nothing is
//! kept. Observed in the worker's `component compiled` lines, which count both.

mod common;

use common::{Worker, get};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

const FUNCTIONS: u32 = 40;

/// The threads wasmtime compiles a build's functions on. They share one pool of Cranelift
/// contexts, so the more threads, the more ways a function can meet a context that compiled a
/// trampoline before it: with cranelift-codegen unpatched, 1 build in 7 on eight threads missed
/// for unchanged functions (README.md, "Patched crates"), and 30 builds catch that but 1 time
/// in 100.
const THREADS: &str = "8";
const BUILDS: u32 = 30;

/// A handler whose answer goes through `FUNCTIONS` functions; `changed` alters one of them.
fn component(changed: u32) -> String {
    let mut funcs = String::new();
    for n in 0..FUNCTIONS {
        let factor = if n == 0 { changed + 3 } else { n + 3 };
        funcs.push_str(&format!(
            "(func $f{n} (param i32) (result i32) local.get 0 i32.const {factor} i32.mul i32.const {n} i32.add)\n"
        ));
    }
    let calls: String = (0..FUNCTIONS).map(|n| format!("call $f{n}\n")).collect();
    common::http_component(&format!(
        r#"{funcs}
    (func (export "handle") (param i32 i32)
      local.get 0
      {calls}
      drop
      unreachable)"#
    ))
}

fn scratch(name: &str) -> PathBuf {
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("function-cache-{name}"));
    let _ = std::fs::remove_dir_all(&path);
    let _ = std::fs::remove_file(&path);
    path
}

fn write(name: &str, changed: u32) -> PathBuf {
    let path = scratch(&format!("{name}.wasm"));
    std::fs::write(&path, wat::parse_str(component(changed)).unwrap()).unwrap();
    path
}

fn load(worker: &mut Worker, app: &str, wasm: &Path) -> String {
    let lock = json!({"spin_lock_version": 1,
        "triggers": [{"id": "t", "trigger_type": "http", "trigger_config": {"component": "c", "route": "/..."}}],
        "components": [{"id": "c", "source": {"content_type": "application/wasm"}}]});
    let reply =
        worker.send(json!({"op": "load", "app": app, "lock": lock, "components": {"c": wasm}}));
    assert_eq!(reply["ok"], json!(true), "{reply}\n{}", worker.log());
    // The compile's line comes before the load's own, and stderr is read by another thread:
    // until the load's line is read, the compile's may not be either.
    assert!(
        worker.log_has(&format!(r#""app":"{app}""#)),
        "{}",
        worker.log()
    );
    reply["url"].as_str().unwrap().to_string()
}

/// The `component compiled` lines so far, as (reused, compiled); (0, 0) without the counts.
fn compiles(worker: &Worker) -> Vec<(u64, u64)> {
    worker
        .log()
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|line| line["msg"] == "component compiled")
        .map(|line| {
            let count = |name: &str| line[name].as_u64().unwrap_or(0);
            (count("functionsReused"), count("functionsCompiled"))
        })
        .collect()
}

#[test]
fn each_build_compiles_only_what_changed_here_and_after_a_restart() {
    let cache = scratch("components");
    let functions = scratch("functions");
    let flags = ["--functions-cache-dir", functions.to_str().unwrap()];
    let env = [("RAYON_NUM_THREADS", THREADS)];
    let mut worker = Worker::start_with_cache_and_env(&cache, &flags, &env);

    load(&mut worker, "first", &write("first", 0));
    let &[(reused, compiled)] = compiles(&worker).as_slice() else {
        panic!("one compile: {}", worker.log())
    };
    assert_eq!(reused, 0, "an empty cache: {}", worker.log());
    assert!(compiled > u64::from(FUNCTIONS), "{compiled}");

    // Each next build: one function changed, so another digest, compiled again.
    let mut url = String::new();
    for changed in 1..=BUILDS {
        let name = format!("build-{changed}");
        url = load(&mut worker, &name, &write(&name, changed));
        let (reused, fresh) = compiles(&worker)[changed as usize];
        assert_eq!(
            (reused, fresh),
            (compiled - 1, 1),
            "build {changed}: only the changed function compiles, the rest is reused"
        );
    }
    // Code from the cache runs: the handler traps after calling every function.
    assert_eq!(get(&url, "/").status, 500);
    assert_eq!(worker.close().code(), Some(0));

    // A worker started again on the same directories: the next build reuses the files.
    let mut again = Worker::start_with_cache_and_env(&cache, &flags, &env);
    let name = "after-restart";
    load(&mut again, name, &write(name, BUILDS + 1));
    assert_eq!(
        compiles(&again),
        vec![(compiled - 1, 1)],
        "after a restart too: {}",
        again.log()
    );
    let entries = std::fs::read_dir(&functions).unwrap().count();
    assert!(entries as u64 >= compiled, "{entries} entries on disk");
    assert_eq!(again.close().code(), Some(0));
}

#[test]
fn without_the_flag_no_function_is_kept() {
    let cache = scratch("no-flag");
    let mut worker = Worker::start_with_cache(&cache, &[]);
    load(&mut worker, "first", &write("no-flag-first", 0));
    load(&mut worker, "second", &write("no-flag-second", 1));
    assert_eq!(compiles(&worker), vec![(0, 0), (0, 0)], "{}", worker.log());
    assert_eq!(worker.close().code(), Some(0));
}

#[test]
fn an_entry_damaged_or_not_the_workers_own_is_compiled_again_and_replaced() {
    let cache = scratch("damaged");
    let functions = scratch("damaged-functions");
    let flags = ["--functions-cache-dir", functions.to_str().unwrap()];
    let wasm = write("damaged", 0);
    let mut worker = Worker::start_with_cache(&cache, &flags);
    load(&mut worker, "first", &wasm);
    let &[(0, compiled)] = compiles(&worker).as_slice() else {
        panic!("one compile, from nothing: {}", worker.log())
    };
    assert_eq!(worker.close().code(), Some(0));

    // Every entry but the first damaged: cut short, garbage, or one byte changed (which may
    // still decode as a function's code). The first stays whole but is open to others' writes,
    // so not one the worker may trust.
    let mut entries: Vec<PathBuf> = std::fs::read_dir(&functions)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for (n, entry) in entries.iter().enumerate().skip(1) {
        let bytes = std::fs::read(entry).unwrap();
        let damaged = match n % 3 {
            0 => bytes[..bytes.len() / 2].to_vec(),
            1 => vec![0x5a; bytes.len()],
            _ => {
                let mut bytes = bytes;
                let middle = bytes.len() / 2;
                bytes[middle] ^= 1;
                bytes
            }
        };
        std::fs::write(entry, damaged).unwrap();
    }
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&entries[0], std::fs::Permissions::from_mode(0o666)).unwrap();
    let damaged: Vec<Vec<u8>> = entries.iter().map(|e| std::fs::read(e).unwrap()).collect();

    // The component's own compiled file is gone too, so the worker compiles it again.
    std::fs::remove_dir_all(&cache).unwrap();
    let mut again = Worker::start_with_cache(&cache, &flags);
    let url = load(&mut again, "again", &wasm);
    assert_eq!(
        compiles(&again),
        vec![(0, compiled)],
        "every entry compiled again, none counted reused: {}",
        again.log()
    );
    // It runs: the handler traps after calling every function, as built.
    assert_eq!(get(&url, "/").status, 500);
    assert_eq!(again.close().code(), Some(0));
    let replaced = entries
        .iter()
        .zip(&damaged)
        .skip(1)
        .filter(|(entry, before)| std::fs::read(entry).unwrap() != **before)
        .count();
    assert_eq!(
        replaced,
        entries.len() - 1,
        "every damaged entry written again"
    );
    let mode = std::fs::metadata(&entries[0]).unwrap().permissions().mode();
    assert_eq!(
        mode & 0o077,
        0,
        "the entry open to others is compiled again, owner-only"
    );
}
