//! The compiled-component cache holds native code the worker maps and runs: a directory another
//! user owns or may write to stops the start (exit 2, naming it), and a compiled file that is
//! not the worker's own (another owner, writable by others, a link) is compiled again, never
//! loaded. The component is a small one in text format, so each compile is quick.

mod common;

use common::Worker;
use serde_json::json;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

// An http handler that answers nothing: only loading it matters here.
fn component() -> String {
    common::http_component(r#"(func (export "handle") (param i32 i32))"#)
}

/// A fresh directory of this test binary's own under the target's scratch space.
fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("cache-dir-tests")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.parent().unwrap()).unwrap();
    dir
}

/// The uid these tests (and so the worker they start) run as.
fn own_uid() -> u32 {
    let probe = scratch("uid-probe");
    std::fs::write(&probe, b"").unwrap();
    std::fs::metadata(&probe).unwrap().uid()
}

/// Runs the worker on `cache` with stdin closed: a worker that starts exits 0 at once.
fn start_on(cache: &Path) -> (Option<i32>, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_worker"))
        .arg("--cache-dir")
        .arg(cache)
        .env_clear()
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn assert_refused(cache: &Path, reason: &str) {
    let (code, stderr) = start_on(cache);
    assert_eq!(code, Some(2), "{}: {stderr}", cache.display());
    assert!(
        stderr.contains("refusing the cache directory")
            && stderr.contains(&format!("--cache-dir {}", cache.display()))
            && stderr.contains(reason),
        "{stderr}"
    );
    assert!(!stderr.contains("worker ready"), "{stderr}");
}

#[test]
fn a_cache_directory_others_may_write_or_own_stops_the_start() {
    for mode in [0o777, 0o775, 0o770, 0o722, 0o1777] {
        let dir = scratch(&format!("mode-{mode:o}"));
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(mode)).unwrap();
        assert_refused(&dir, "lets other users write to it");
    }

    // Someone else's directory: made for another uid when these run as root, else the root's own.
    let foreign = if own_uid() == 0 {
        let dir = scratch("foreign");
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::os::unix::fs::chown(&dir, Some(65534), Some(65534)).unwrap();
        dir
    } else {
        PathBuf::from("/")
    };
    let owner = std::fs::metadata(&foreign).unwrap().uid();
    assert_refused(
        &foreign,
        &format!("owned by uid {owner}, not by the worker's uid"),
    );

    let file = scratch("a-file");
    std::fs::write(&file, b"").unwrap();
    assert_refused(&file, "not a directory");
}

#[test]
fn a_private_cache_directory_is_used_and_a_missing_one_made_owner_only() {
    let kept = scratch("kept-755");
    std::fs::create_dir(&kept).unwrap();
    std::fs::set_permissions(&kept, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (code, stderr) = start_on(&kept);
    assert_eq!(code, Some(0), "no other user may write to it: {stderr}");
    assert!(stderr.contains("worker ready"), "{stderr}");

    let missing = scratch("missing").join("compiled");
    let (code, stderr) = start_on(&missing);
    assert_eq!(code, Some(0), "{stderr}");
    let meta = std::fs::metadata(&missing).unwrap();
    assert_eq!(
        meta.mode() & 0o777,
        0o700,
        "made owner-only whatever the umask"
    );
    assert_eq!(meta.uid(), own_uid());
}

fn load(worker: &mut Worker, wasm: &Path) {
    let lock = json!({"spin_lock_version": 1,
        "triggers": [{"id": "t", "trigger_type": "http", "trigger_config": {"component": "c", "route": "/..."}}],
        "components": [{"id": "c", "source": {"content_type": "application/wasm"}}]});
    let reply = worker
        .send(json!({"op": "load", "app": "cached", "lock": lock, "components": {"c": wasm}}));
    assert_eq!(reply["ok"], json!(true), "{reply}\n{}", worker.log());
}

fn compiled_file(cache: &Path) -> PathBuf {
    std::fs::read_dir(cache)
        .unwrap()
        .flatten()
        .map(|entry| entry.path())
        .find(|path| path.extension().is_some_and(|e| e == "cwasm"))
        .expect("a compiled file")
}

/// The worker's log once it has exited: through its last line, which stderr's reader thread
/// may hand over after the exit.
fn whole_log(worker: Worker) -> String {
    let log = worker.log.clone();
    assert_eq!(worker.close().code(), Some(0));
    for _ in 0..100 {
        let text = log.lock().unwrap().clone();
        if text.contains("stdin closed, exiting") {
            return text;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("no exit line: {}", log.lock().unwrap())
}

/// Loads the component from a cache whose compiled file `tamper` changed: whether the worker
/// refused that file and compiled it again, and its log.
fn reload_after(name: &str, tamper: impl Fn(&Path)) -> (bool, String) {
    let cache = scratch(name);
    let wasm = scratch(&format!("{name}.wasm"));
    std::fs::write(&wasm, wat::parse_str(component()).unwrap()).unwrap();
    let mut first = Worker::start_with_cache(&cache, &[]);
    load(&mut first, &wasm);
    assert_eq!(first.close().code(), Some(0));
    let file = compiled_file(&cache);
    assert_eq!(
        std::fs::metadata(&file).unwrap().mode() & 0o777,
        0o600,
        "written owner-only"
    );
    tamper(&file);
    let mut again = Worker::start_with_cache(&cache, &[]);
    load(&mut again, &wasm);
    let log = whole_log(again);
    let refused = log.contains("cached component not the worker's own, compiling again")
        && log.contains("\"component compiled\"");
    let meta = std::fs::symlink_metadata(&file).unwrap();
    if refused {
        assert!(meta.file_type().is_file(), "replaced by a file of its own");
        assert_eq!((meta.uid(), meta.mode() & 0o777), (own_uid(), 0o600));
    }
    (refused, log)
}

#[test]
fn a_compiled_file_that_is_not_the_workers_own_is_compiled_again_not_loaded() {
    let (refused, log) = reload_after("untouched", |_| {});
    assert!(!refused, "its own file is loaded: {log}");
    assert!(!log.contains("\"component compiled\""), "{log}");

    let (refused, log) = reload_after("writable", |file| {
        std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o666)).unwrap();
    });
    assert!(refused, "a file others may write to: {log}");
    assert!(log.contains("lets other users write to it"), "{log}");

    let (refused, log) = reload_after("linked", |file| {
        let elsewhere = file.with_extension("elsewhere");
        std::fs::rename(file, &elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, file).unwrap();
    });
    assert!(refused, "a link to a file elsewhere: {log}");
    assert!(log.contains("not a regular file"), "{log}");

    // Another user's file: only root can give a file away.
    if own_uid() == 0 {
        let (refused, log) = reload_after("foreign", |file| {
            std::os::unix::fs::chown(file, Some(65534), Some(65534)).unwrap();
        });
        assert!(refused, "another user's file: {log}");
        assert!(log.contains("owned by uid 65534"), "{log}");
    }
}

#[test]
fn loads_of_one_component_at_once_share_its_compile() {
    // Two pods of one application in a cluster, or two applications of one build, load the
    // same component side by side: they once wrote the same file aside and one lost it.
    let wasm = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cache-dir-shared.wasm");
    std::fs::write(&wasm, wat::parse_str(component()).unwrap()).unwrap();
    let lock = json!({"spin_lock_version": 1,
        "triggers": [{"id": "t", "trigger_type": "http", "trigger_config": {"component": "c", "route": "/..."}}],
        "components": [{"id": "c", "source": {"content_type": "application/wasm"}}]});
    for round in 0..10 {
        let cache = scratch(&format!("shared-{round}"));
        let mut worker = Worker::start_with_cache(&cache, &[]);
        let loads = (0..6)
            .map(|i| json!({"op": "load", "app": format!("app{i}"), "lock": lock, "components": {"c": wasm}}))
            .collect();
        for reply in worker.send_all(loads) {
            assert_eq!(reply["ok"], json!(true), "{reply}\n{}", worker.log());
        }
        let files: Vec<_> = std::fs::read_dir(&cache)
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(
            files.len(),
            1,
            "one compiled file, nothing left aside: {files:?}"
        );
    }
}
