//! Cranelift's background compiles (`--baseline-first`) run in a process of their own,
//! `worker compile WASM FLAGS...`, in a session of its own at the lowest priority. A thread's
//! nice was not enough: with the kernel's autogroups on (most desktops and Debian's default),
//! the scheduler shares the CPU between sessions before it looks at a thread's nice, and every
//! build step runs in a session of its own (bwrap `--new-session`), so the worker's compile
//! thread took half the machine from the build of the next deploy beside it (bench/RESULTS.md).
//! A session made for the compile, its autogroup at nice 19, gets what the rest leaves; its
//! threads are at nice 19 too, for a kernel without autogroups. The worker's own autogroup is
//! left alone: it serves requests.
//!
//! The child writes the compiled file into the cache, as a load would (written aside, then
//! renamed), and exits; the worker then maps it. It exits as well when its stdin closes: the
//! worker holds the other end, so a compile never outlives the worker that asked for it.

use crate::cache::{ComponentCache, FunctionCache};
use crate::config::Config;
use crate::log;
use serde_json::json;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

/// The first argument that makes the worker a compile process.
pub const SUBCOMMAND: &str = "compile";

const LOWEST: libc::c_int = 19;

/// The kernel takes one autogroup nice a tenth of a second from an unprivileged process,
/// machine-wide (EAGAIN meanwhile): tries for about two seconds, since other workers' compiles
/// may start in the same moment, then the compile goes on at its threads' nice.
const AUTOGROUP_TRIES: u32 = 20;
const AUTOGROUP_WAIT: Duration = Duration::from_millis(110);

/// Why a compile apart did not fill the cache.
#[derive(Debug, thiserror::Error)]
pub enum ApartError {
    #[error("the compile process could not start: {0}")]
    Spawn(std::io::Error),
    #[error("waiting for the compile process: {0}")]
    Wait(std::io::Error),
    /// Its own log line says why.
    #[error("the compile process ended with {0}")]
    Failed(std::process::ExitStatus),
}

/// The worker's side: compiles the component at `wasm` into the cache in a compile process
/// given the worker's own `flags` (the same engine, the same cache), and waits for it.
/// Blocks: call it off the async threads.
pub fn compile(wasm: &Path, flags: &[String]) -> Result<(), ApartError> {
    // The running binary, even when the file at its path was replaced by an upgrade since.
    let mut child = Command::new("/proc/self/exe")
        .arg(SUBCOMMAND)
        .arg(wasm)
        .args(flags)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(ApartError::Spawn)?;
    // `wait` would close the child's stdin first, which the child reads as the worker gone.
    let stdin = child.stdin.take();
    let status = child.wait().map_err(ApartError::Wait)?;
    drop(stdin);
    match status.success() {
        true => Ok(()),
        false => Err(ApartError::Failed(status)),
    }
}

/// `compile WASM` and the worker's flags, from the arguments after the program's name; none
/// when they are the worker's own.
pub fn parse(args: &mut Vec<String>) -> Option<Result<PathBuf, &'static str>> {
    if args.first().map(String::as_str) != Some(SUBCOMMAND) {
        return None;
    }
    args.remove(0);
    if args.is_empty() {
        return Some(Err("compile needs the wasm's path"));
    }
    Some(Ok(PathBuf::from(args.remove(0))))
}

/// The compile process: exit code 0 when the cache holds the component's compiled file.
pub fn run(wasm: &Path, config: &Config, functions: Option<Arc<FunctionCache>>) -> i32 {
    let autogroup = lowest_priority();
    exit_with_the_worker();
    log::info(
        "compiling apart",
        json!({
            "pid": std::process::id(),
            // SAFETY: getsid and getpriority only read the calling process's values.
            "session": unsafe { libc::getsid(0) },
            "nice": unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) },
            "autogroupNice": autogroup,
        }),
    );
    let engine = match crate::engine::engine(config, functions.clone()) {
        Ok(engine) => engine,
        Err(e) => {
            log::error("compiling apart: engine", json!({"err": e.to_string()}));
            return 1;
        }
    };
    let cache = ComponentCache::new(&config.cache_dir, engine, functions);
    match cache.load(wasm, None) {
        Ok(_) => 0,
        Err(e) => {
            log::error("compiling apart failed", json!({"err": e.to_string()}));
            1
        }
    }
}

/// A session of its own at nice 19, and that session's autogroup at 19 when the kernel has
/// autogroups: the autogroup's nice as the kernel reads it back, if any.
fn lowest_priority() -> Option<i64> {
    // SAFETY: setsid and setpriority change only this process's session and this thread's
    // nice, before any other thread starts (each inherits it).
    unsafe {
        libc::setsid();
        libc::setpriority(libc::PRIO_PROCESS, 0, LOWEST);
    }
    for _ in 0..AUTOGROUP_TRIES {
        match std::fs::write("/proc/self/autogroup", LOWEST.to_string()) {
            Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => std::thread::sleep(AUTOGROUP_WAIT),
            _ => break,
        }
    }
    autogroup_nice(&std::fs::read_to_string("/proc/self/autogroup").ok()?)
}

/// The nice in `/proc/PID/autogroup`'s text: `/autogroup-2814 nice 19`.
pub fn autogroup_nice(text: &str) -> Option<i64> {
    text.split_whitespace().last()?.parse().ok()
}

fn exit_with_the_worker() {
    std::thread::spawn(|| {
        let mut stdin = std::io::stdin();
        let mut byte = [0u8; 64];
        while matches!(stdin.read(&mut byte), Ok(n) if n > 0) {}
        std::process::exit(1);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_subcommand_and_its_path() {
        let mut args = vec!["--cache-dir".to_string(), "/c".to_string()];
        assert!(parse(&mut args).is_none());
        assert_eq!(args.len(), 2);
        let mut args: Vec<String> = ["compile", "/a.wasm", "--cache-dir", "/c"]
            .map(String::from)
            .into();
        assert_eq!(parse(&mut args), Some(Ok(PathBuf::from("/a.wasm"))));
        assert_eq!(args, ["--cache-dir", "/c"]);
        let mut args = vec!["compile".to_string()];
        assert!(matches!(parse(&mut args), Some(Err(_))));
    }

    #[test]
    fn the_autogroup_text() {
        assert_eq!(autogroup_nice("/autogroup-2814 nice 19\n"), Some(19));
        assert_eq!(autogroup_nice("/autogroup-1 nice -5"), Some(-5));
        assert_eq!(autogroup_nice(""), None);
    }
}
