//! Compiled components on disk, by the sha256 of their wasm. Compiling a 12 MB js component
//! takes seconds of CPU; loading its compiled form is a map of the file. Components in
//! memory are shared by every application that loads the same digest.

mod compiled;
mod functions;
mod trust;

pub use compiled::Compiled;
pub use functions::{FUNCTIONS_MAX_BYTES, FunctionCache};
pub use trust::prepare_dir;

use crate::log;
use serde_json::json;
use sha2::{Digest, Sha256};
use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use trust::trusted_file;
use wasmtime::Engine;

const SUFFIX: &str = ".cwasm";

/// Why a component could not be loaded: its wasm, or the compiled file made of it.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    #[error("{}: {error}", .path.display())]
    Read {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("{}: digest {digest}, the lock says {expected}", .path.display())]
    Digest {
        path: PathBuf,
        digest: String,
        expected: String,
    },
    #[error("{}: {error}", .path.display())]
    Compile {
        path: PathBuf,
        error: wasmtime::Error,
    },
    #[error("{}: {error}", .path.display())]
    Write {
        path: PathBuf,
        error: std::io::Error,
    },
    /// Serializing what was compiled, or mapping the file written.
    #[error("{0}")]
    Compiled(wasmtime::Error),
}

pub struct ComponentCache {
    dir: PathBuf,
    engine: Engine,
    /// The functions the engine's compiles take from disk, when it has that cache: counted in
    /// each compile's log line.
    functions: Option<Arc<FunctionCache>>,
    /// Components loaded by some application, so a second application maps nothing new.
    loaded: Mutex<HashMap<String, Compiled>>,
    /// One gate per digest being loaded: two loads of the same component (two applications,
    /// two pods of one in a cluster) compiled it side by side into the same file aside, and one
    /// removed the other's before its rename. The second now waits and maps the first's file.
    gates: Mutex<HashMap<String, Arc<Mutex<()>>>>,
}

/// Names each file written aside apart from any other load's, in this process or another.
static ASIDE: AtomicU64 = AtomicU64::new(0);

/// Returns the heap's free memory to the kernel: malloc keeps what was freed in its arenas,
/// so without this the worker's RSS would stay at its peak (a compile, an unloaded app).
pub fn give_back_free_memory() {
    // SAFETY: malloc_trim only returns free memory to the kernel.
    unsafe { libc::malloc_trim(0) };
}

/// `sha256:<hex>`, as a lock's `source.digest` names the wasm.
pub fn digest_of(bytes: &[u8]) -> String {
    let hash = Sha256::digest(bytes);
    let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// What `lookup` found.
pub enum Lookup {
    Found(String, Compiled),
    Missing { digest: String, bytes: Vec<u8> },
}

/// The wasm at `wasm_path` and its digest, which must be `expected` when the lock names one.
fn read(wasm_path: &Path, expected: Option<&str>) -> Result<(Vec<u8>, String), CacheError> {
    let bytes = std::fs::read(wasm_path).map_err(|error| CacheError::Read {
        path: wasm_path.to_path_buf(),
        error,
    })?;
    let digest = digest_of(&bytes);
    if let Some(expected) = expected.filter(|e| *e != digest) {
        return Err(CacheError::Digest {
            path: wasm_path.to_path_buf(),
            digest,
            expected: expected.to_string(),
        });
    }
    Ok((bytes, digest))
}

/// The preamble's version field: 1 for a core module, 0x0d for a component.
pub fn is_module(bytes: &[u8]) -> bool {
    bytes.get(4..8) == Some(&[1, 0, 0, 0])
}

impl ComponentCache {
    /// `dir` must have passed `prepare_dir`.
    pub fn new(dir: &Path, engine: Engine, functions: Option<Arc<FunctionCache>>) -> Self {
        ComponentCache {
            dir: dir.to_path_buf(),
            engine,
            functions,
            loaded: Mutex::new(HashMap::new()),
            gates: Mutex::new(HashMap::new()),
        }
    }

    fn path(&self, digest: &str, module: bool) -> PathBuf {
        let kind = if module { ".module" } else { "" };
        self.dir.join(format!(
            "{}{kind}{SUFFIX}",
            digest.trim_start_matches("sha256:")
        ))
    }

    /// The component in `wasm_path`, whose digest must be `expected` when the lock names one.
    /// Blocks (reads, hashes, maybe compiles): call it off the async threads.
    pub fn load(
        &self,
        wasm_path: &Path,
        expected: Option<&str>,
    ) -> Result<(String, Compiled), CacheError> {
        let (bytes, digest) = read(wasm_path, expected)?;
        if let Some(component) = self.loaded.lock().unwrap().get(&digest) {
            return Ok((digest, component.clone()));
        }
        let gate = self
            .gates
            .lock()
            .unwrap()
            .entry(digest.clone())
            .or_default()
            .clone();
        let result = {
            let _turn = gate.lock().unwrap_or_else(|e| e.into_inner());
            self.load_alone(wasm_path, &bytes, digest.clone())
        };
        let mut gates = self.gates.lock().unwrap();
        // The map's and ours: nobody else waits at this gate.
        if Arc::strong_count(&gate) == 2 {
            gates.remove(&digest);
        }
        result
    }

    /// The component's compiled form when it is at hand (in memory, or its file), compiling
    /// nothing: else its wasm and digest, for the baseline compiler (`slot.rs`). A compile of
    /// it under way is not waited for: its file appears whole, by a rename, when it is done.
    pub fn lookup(&self, wasm_path: &Path, expected: Option<&str>) -> Result<Lookup, CacheError> {
        let (bytes, digest) = read(wasm_path, expected)?;
        if let Some(component) = self.loaded.lock().unwrap().get(&digest) {
            return Ok(Lookup::Found(digest, component.clone()));
        }
        let module = is_module(&bytes);
        let cached = self.path(&digest, module);
        if cached.exists() && trusted_file(&cached).is_ok() {
            // SAFETY: as in `load_alone`.
            if let Ok(component) =
                unsafe { Compiled::deserialize_file(&self.engine, &cached, module) }
            {
                let (digest, component) = self.remember(digest, component);
                return Ok(Lookup::Found(digest, component));
            }
        }
        Ok(Lookup::Missing { digest, bytes })
    }

    /// `load` with the digest's gate held: another load of it has compiled it meanwhile, or
    /// this one does.
    fn load_alone(
        &self,
        wasm_path: &Path,
        bytes: &[u8],
        digest: String,
    ) -> Result<(String, Compiled), CacheError> {
        if let Some(component) = self.loaded.lock().unwrap().get(&digest) {
            return Ok((digest, component.clone()));
        }
        let module = is_module(bytes);
        let cached = self.path(&digest, module);
        // SAFETY (of deserialize_file): the cache directory is the worker's own and no other
        // user's to write (prepare_dir refused it otherwise), the file is ours and only this
        // worker writes there, each file whole (written aside, then renamed); wasmtime still
        // checks the file was made by this engine's version and settings.
        if cached.exists() {
            match trusted_file(&cached) {
                Err(reason) => log::warn(
                    "cached component not the worker's own, compiling again",
                    json!({"digest": digest, "err": reason.to_string()}),
                ),
                Ok(()) => {
                    match unsafe { Compiled::deserialize_file(&self.engine, &cached, module) } {
                        Ok(component) => return Ok(self.remember(digest, component)),
                        Err(e) => log::warn(
                            "cached component unusable, compiling again",
                            json!({"digest": digest, "err": e.to_string()}),
                        ),
                    }
                }
            }
        }
        let started = Instant::now();
        let before = self.functions.as_ref().map(|f| f.counts());
        let compiled = Compiled::new(&self.engine, bytes).map_err(|error| CacheError::Compile {
            path: wasm_path.to_path_buf(),
            error,
        })?;
        let serialized = compiled.serialize().map_err(CacheError::Compiled)?;
        drop(compiled);
        let aside = cached.with_extension(format!(
            "tmp{}-{}",
            std::process::id(),
            ASIDE.fetch_add(1, Ordering::Relaxed)
        ));
        // Owner-only whatever the umask: the check above must accept what this writes. A file
        // planted under the name is replaced by the rename, never written through.
        let _ = std::fs::remove_file(&aside);
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&aside)
            .and_then(|mut file| file.write_all(&serialized))
            .and_then(|_| std::fs::rename(&aside, &cached))
            .map_err(|error| CacheError::Write {
                path: cached.clone(),
                error,
            })?;
        let mut fields = json!({"digest": digest, "compiler": "cranelift", "ms": started.elapsed().as_millis() as u64, "bytes": serialized.len()});
        // Another load compiling beside this one counts in these too: a sum, not this one's own.
        if let (Some(functions), Some(before)) = (&self.functions, before) {
            let now = functions.counts();
            fields["functionsReused"] = json!(now.reused - before.reused);
            fields["functionsCompiled"] = json!(now.compiled - before.compiled);
        }
        log::info("component compiled", fields);
        drop(serialized);
        // Compiling a 12 MB component grows the heap by hundreds of MB that malloc would
        // keep: given back now, the worker's RSS is what its applications use.
        give_back_free_memory();
        // Mapped from the file rather than kept on the heap: its pages are clean, shared
        // and given back under pressure.
        let component = unsafe { Compiled::deserialize_file(&self.engine, &cached, module) }
            .map_err(CacheError::Compiled)?;
        Ok(self.remember(digest, component))
    }

    fn remember(&self, digest: String, component: Compiled) -> (String, Compiled) {
        self.loaded
            .lock()
            .unwrap()
            .insert(digest.clone(), component.clone());
        (digest, component)
    }

    /// Forgets the components no application uses and deletes their files. Returns the
    /// digests removed from disk.
    pub fn prune(&self, in_use: &HashSet<String>) -> Vec<String> {
        self.loaded
            .lock()
            .unwrap()
            .retain(|d, _| in_use.contains(d));
        let mut removed = Vec::new();
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return removed;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(hex) = name.strip_suffix(SUFFIX) else {
                continue;
            };
            let hex = hex.trim_end_matches(".module");
            let digest = format!("sha256:{hex}");
            if !in_use.contains(&digest) && std::fs::remove_file(entry.path()).is_ok() {
                removed.push(digest);
            }
        }
        removed
    }

    /// Lets go of in-memory components no application uses, keeping their files.
    pub fn release(&self, in_use: &HashSet<String>) {
        self.loaded
            .lock()
            .unwrap()
            .retain(|d, _| in_use.contains(d));
    }
}
