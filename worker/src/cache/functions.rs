//! Cranelift's compiled functions by content (wasmtime's incremental compilation cache), on
//! disk in `--functions-cache-dir`. A new build of a js function is the same engine
//! (StarlingMonkey, thousands of functions) with another snapshot of the user's code: its
//! functions hash the same, so its compile takes them from here instead of compiling the 12 MB
//! again (bench/RESULTS.md, bench:deploy). The key is Cranelift's own hash of the function, its
//! version and the target's flags; a changed function or another Cranelift misses.
//!
//! What is read here becomes native code the worker runs: the directory is the cache's, held
//! to the same trust (the worker's own, nobody else's to write), each file checked as well.
//! Each entry carries the sha256 of its bytes (`HEADER`), checked at every read: Cranelift
//! takes whatever decodes as the function's code, so without it a file cut short or altered
//! on disk counted as reused while wasmtime compiled it again, or, still decoding, ran altered.
//! Bounded: past `max_bytes` written, the entries are removed and the cache starts again
//! (a miss only costs a compile), so it never grows past about that much.

use super::trust::{Untrusted, prepare_dir, trusted_file};
use crate::log;
use serde_json::json;
use sha2::{Digest, Sha256};
use std::borrow::Cow;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// The bound on the functions' cache. A compiled js component is about 36 MB (README), its
/// functions' entries of that order: this holds many engines' (componentize-js versions) and
/// the go and rust applications' beside them.
pub const FUNCTIONS_MAX_BYTES: u64 = 1 << 30;

/// Before each entry's bytes: this, then their sha256. An entry without it (a file of an
/// older worker, or one damaged) is no entry.
const MAGIC: &[u8; 8] = b"wfunc\x00\x00\x01";
const HEADER: usize = MAGIC.len() + 32;

/// The header `insert` writes before `value`.
fn header(value: &[u8]) -> Vec<u8> {
    let mut header = Vec::with_capacity(HEADER);
    header.extend_from_slice(MAGIC);
    header.extend_from_slice(&Sha256::digest(value));
    header
}

/// The value of an entry's file, when its header holds.
fn value_of(mut bytes: Vec<u8>) -> Option<Vec<u8>> {
    let (head, value) = bytes.split_at_checked(HEADER)?;
    if head != header(value) {
        return None;
    }
    bytes.drain(..HEADER);
    Some(bytes)
}

/// Functions taken from the cache and compiled, since the worker started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub reused: u64,
    pub compiled: u64,
}

#[derive(Debug)]
pub struct FunctionCache {
    dir: PathBuf,
    max_bytes: u64,
    /// Bytes of the entries on disk, as counted at start and by each insert since.
    bytes: Mutex<u64>,
    reused: AtomicU64,
    compiled: AtomicU64,
}

/// Names each file written aside apart from any other insert's.
static ASIDE: AtomicU64 = AtomicU64::new(0);

impl FunctionCache {
    /// Made owner-only when missing; refused, as the cache directory, when not the worker's own.
    pub fn open(dir: &Path, max_bytes: u64) -> Result<FunctionCache, Untrusted> {
        prepare_dir(dir)?;
        let bytes = std::fs::read_dir(dir)
            .map_err(Untrusted::Unreadable)?
            .flatten()
            .filter_map(|e| e.metadata().ok())
            .map(|m| m.len())
            .sum();
        Ok(FunctionCache {
            dir: dir.to_path_buf(),
            max_bytes,
            bytes: Mutex::new(bytes),
            reused: AtomicU64::new(0),
            compiled: AtomicU64::new(0),
        })
    }

    pub fn counts(&self) -> Counts {
        Counts {
            reused: self.reused.load(Ordering::Relaxed),
            compiled: self.compiled.load(Ordering::Relaxed),
        }
    }

    fn path(&self, key: &[u8]) -> PathBuf {
        let hex: String = key.iter().map(|b| format!("{b:02x}")).collect();
        self.dir.join(hex)
    }

    /// Removes every entry: the bound was reached.
    fn clear(&self, bytes: &mut u64) {
        if let Ok(entries) = std::fs::read_dir(&self.dir) {
            for entry in entries.flatten() {
                let _ = std::fs::remove_file(entry.path());
            }
        }
        log::info(
            "compiled functions' cache full, started again",
            json!({"maxBytes": self.max_bytes}),
        );
        *bytes = 0;
    }
}

impl wasmtime::CacheStore for FunctionCache {
    fn get(&self, key: &[u8]) -> Option<Cow<'_, [u8]>> {
        let path = self.path(key);
        let found = trusted_file(&path)
            .ok()
            .and_then(|()| std::fs::read(&path).ok());
        let Some(bytes) = found else {
            self.compiled.fetch_add(1, Ordering::Relaxed);
            return None;
        };
        let size = bytes.len() as u64;
        match value_of(bytes) {
            Some(value) => {
                self.reused.fetch_add(1, Ordering::Relaxed);
                Some(Cow::Owned(value))
            }
            None => {
                // Damaged: wasmtime compiles it again and the insert writes it anew; removed
                // meanwhile so that no other compile reads it. A whole entry renamed in since
                // the read goes too, which costs one more compile.
                if std::fs::remove_file(&path).is_ok() {
                    let mut bytes = self.bytes.lock().unwrap_or_else(|e| e.into_inner());
                    *bytes = bytes.saturating_sub(size);
                }
                self.compiled.fetch_add(1, Ordering::Relaxed);
                None
            }
        }
    }

    fn insert(&self, key: &[u8], value: Vec<u8>) -> bool {
        let header = header(&value);
        let size = (header.len() + value.len()) as u64;
        {
            let mut bytes = self.bytes.lock().unwrap_or_else(|e| e.into_inner());
            if *bytes + size > self.max_bytes {
                self.clear(&mut bytes);
            }
            *bytes += size;
        }
        let path = self.path(key);
        let aside = path.with_extension(format!(
            "tmp{}-{}",
            std::process::id(),
            ASIDE.fetch_add(1, Ordering::Relaxed)
        ));
        // Owner-only and whole (written aside, then renamed), as the compiled components.
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&aside)
            .and_then(|mut file| {
                file.write_all(&header)?;
                file.write_all(&value)
            })
            .and_then(|_| std::fs::rename(&aside, &path));
        if written.is_err() {
            let _ = std::fs::remove_file(&aside);
        }
        written.is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasmtime::CacheStore;

    #[test]
    fn entries_come_back_and_the_bound_holds() {
        let dir = std::env::temp_dir().join(format!("functions-cache-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let cache = FunctionCache::open(&dir, 10_000).unwrap();
        assert!(cache.get(b"k").is_none());
        assert!(cache.insert(b"k", vec![7; 100]));
        assert_eq!(cache.get(b"k").as_deref(), Some(&[7u8; 100][..]));
        assert_eq!(
            cache.counts(),
            Counts {
                reused: 1,
                compiled: 1
            }
        );
        // Many more bytes than the bound, in entries of varied sizes: the directory never
        // holds more than the bound, and the newest entry is always there.
        for n in 0u32..300 {
            let key = n.to_be_bytes();
            let size = 1 + (n as usize * 37) % 900;
            assert!(cache.insert(&key, vec![1; size]));
            let on_disk: u64 = std::fs::read_dir(&dir)
                .unwrap()
                .flatten()
                .map(|e| e.metadata().unwrap().len())
                .sum();
            assert!(on_disk <= 10_000, "{on_disk} bytes after {n}");
            assert!(cache.get(&key).is_some());
        }
        // A cache opened again counts what is there already.
        drop(cache);
        let again = FunctionCache::open(&dir, 10_000).unwrap();
        assert!(*again.bytes.lock().unwrap() > 0);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_damaged_entry_is_no_entry_and_goes() {
        let dir =
            std::env::temp_dir().join(format!("functions-cache-damaged-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let cache = FunctionCache::open(&dir, 10_000).unwrap();
        let value: Vec<u8> = (0..200u8).collect();
        type Damage = fn(Vec<u8>) -> Vec<u8>;
        let damages: [(&str, Damage); 4] = [
            ("cut short", |mut bytes| {
                bytes.truncate(bytes.len() - 1);
                bytes
            }),
            ("one byte changed", |mut bytes| {
                bytes[HEADER + 7] ^= 1;
                bytes
            }),
            ("its sum changed", |mut bytes| {
                bytes[MAGIC.len()] ^= 1;
                bytes
            }),
            // As an older worker wrote it.
            ("no header", |bytes| bytes[HEADER..].to_vec()),
        ];
        for (n, (what, damage)) in damages.iter().enumerate() {
            let key = [n as u8];
            assert!(cache.insert(&key, value.clone()));
            assert_eq!(cache.get(&key).as_deref(), Some(&value[..]), "{what}");
            let path = cache.path(&key);
            std::fs::write(&path, damage(std::fs::read(&path).unwrap())).unwrap();
            let before = cache.counts();
            assert!(cache.get(&key).is_none(), "{what}");
            assert_eq!(
                cache.counts(),
                Counts {
                    reused: before.reused,
                    compiled: before.compiled + 1
                },
                "{what}: counted compiled"
            );
            assert!(!path.exists(), "{what}: removed");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
