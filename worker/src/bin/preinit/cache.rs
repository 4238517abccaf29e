//! The pre-initializer's compiled code, kept between builds: compiling componentize-js's engine
//! (10 MB of wasm) takes about 1.4 s of a js build's 5, and it is the same engine build after
//! build of an application (its bytes change only with its imports or a new componentize-js).
//!
//! Where: `{home}/.cache/preinit`, home from `HOME` or, as componentize-js passes no
//! environment, the user's passwd entry. The builder makes that home the application's own
//! dependency cache (builders/src/sandbox/context.ts), so no other application's build can
//! write code this one runs.
//!
//! One entry, the last compiled: named by the sha256 of the wasm it was compiled from, its
//! bytes behind their own sha256, checked before wasmtime reads them. An entry that fails the
//! check, or that this wasmtime refuses (another version, another CPU), is compiled again and
//! replaced. Any failure to read or write the cache only costs the compile.

use sha2::{Digest, Sha256};
use std::fs;
use std::path::{Path, PathBuf};
use wasmtime::{Engine, Module};

const SUM: usize = 32;

/// The cache directory, when a home can be found.
pub fn dir() -> Option<PathBuf> {
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .or_else(passwd_home)?;
    Some(home.join(".cache").join("preinit"))
}

fn passwd_home() -> Option<PathBuf> {
    use std::ffi::CStr;
    use std::os::unix::ffi::OsStrExt;
    let mut entry: libc::passwd = unsafe { std::mem::zeroed() };
    let mut buffer = vec![0 as libc::c_char; 16 * 1024];
    let mut found: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: every pointer is to a live local of the size given; the result borrows `buffer`.
    let status = unsafe {
        libc::getpwuid_r(
            libc::getuid(),
            &mut entry,
            buffer.as_mut_ptr(),
            buffer.len(),
            &mut found,
        )
    };
    if status != 0 || found.is_null() || entry.pw_dir.is_null() {
        return None;
    }
    // SAFETY: getpwuid_r succeeded, so pw_dir points at a NUL-terminated string in `buffer`.
    let home = unsafe { CStr::from_ptr(entry.pw_dir) };
    Some(PathBuf::from(std::ffi::OsStr::from_bytes(home.to_bytes())))
}

fn entry_name(wasm: &[u8]) -> String {
    let digest = Sha256::digest(wasm);
    let hex: String = digest.iter().map(|byte| format!("{byte:02x}")).collect();
    format!("{hex}.cwasm")
}

/// The module compiled from `wasm`: from the cache when its entry is sound, else compiled
/// and kept as the cache's one entry.
pub fn module(engine: &Engine, wasm: &[u8], dir: Option<&Path>) -> wasmtime::Result<Module> {
    let Some(dir) = dir else {
        return Module::new(engine, wasm);
    };
    let path = dir.join(entry_name(wasm));
    if let Some(module) = read(engine, &path) {
        return Ok(module);
    }
    let module = Module::new(engine, wasm)?;
    if let Ok(code) = module.serialize() {
        let _ = write(dir, &path, &code);
    }
    Ok(module)
}

fn read(engine: &Engine, path: &Path) -> Option<Module> {
    let bytes = fs::read(path).ok()?;
    if bytes.len() < SUM || Sha256::digest(&bytes[SUM..]).as_slice() != &bytes[..SUM] {
        return None;
    }
    // SAFETY: the bytes are what `serialize` wrote for this engine's build (their sum checked
    // above), in a directory only this application's builds can write; wasmtime itself
    // refuses code from another version or for another CPU.
    unsafe { Module::deserialize(engine, &bytes[SUM..]) }.ok()
}

fn write(dir: &Path, path: &Path, code: &[u8]) -> std::io::Result<()> {
    fs::create_dir_all(dir)?;
    let temporary = dir.join(format!(".{}.tmp", std::process::id()));
    let mut bytes = Sha256::digest(code).to_vec();
    bytes.extend_from_slice(code);
    fs::write(&temporary, &bytes)?;
    fs::rename(&temporary, path)?;
    // The one entry: every other file goes, a stale entry or another run's leftover.
    for other in fs::read_dir(dir)?.flatten() {
        if other.path() != path {
            let _ = fs::remove_file(other.path());
        }
    }
    Ok(())
}
