//! Compiled components on disk, by the sha256 of their wasm. Compiling a 12 MB js component
//! takes seconds of CPU; loading its compiled form is a map of the file. Components in
//! memory are shared by every application that loads the same digest.

use crate::log;
use serde_json::json;
use sha2::{Digest, Sha256};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;
use wasmtime::Engine;
use wasmtime::component::Component;

const SUFFIX: &str = ".cwasm";

pub struct ComponentCache {
    dir: PathBuf,
    engine: Engine,
    /// Components loaded by some application, so a second application maps nothing new.
    loaded: Mutex<HashMap<String, Component>>,
}

/// `sha256:<hex>`, as a lock's `source.digest` names the wasm.
pub fn digest_of(bytes: &[u8]) -> String {
    let hash = Sha256::digest(bytes);
    let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

impl ComponentCache {
    pub fn new(dir: &Path, engine: Engine) -> std::io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        Ok(ComponentCache {
            dir: dir.to_path_buf(),
            engine,
            loaded: Mutex::new(HashMap::new()),
        })
    }

    fn path(&self, digest: &str) -> PathBuf {
        self.dir
            .join(format!("{}{SUFFIX}", digest.trim_start_matches("sha256:")))
    }

    /// The component in `wasm_path`, whose digest must be `expected` when the lock names one.
    /// Blocks (reads, hashes, maybe compiles): call it off the async threads.
    pub fn load(
        &self,
        wasm_path: &Path,
        expected: Option<&str>,
    ) -> Result<(String, Component), String> {
        let bytes =
            std::fs::read(wasm_path).map_err(|e| format!("{}: {e}", wasm_path.display()))?;
        let digest = digest_of(&bytes);
        if let Some(expected) = expected.filter(|e| *e != digest) {
            return Err(format!(
                "{}: digest {digest}, the lock says {expected}",
                wasm_path.display()
            ));
        }
        if let Some(component) = self.loaded.lock().unwrap().get(&digest) {
            return Ok((digest, component.clone()));
        }
        let cached = self.path(&digest);
        // SAFETY (of deserialize_file): the cache directory is the worker's own and only it
        // writes there, each file whole (written aside, then renamed); wasmtime still checks
        // the file was made by this engine's version and settings.
        if cached.exists() {
            match unsafe { Component::deserialize_file(&self.engine, &cached) } {
                Ok(component) => return Ok(self.remember(digest, component)),
                Err(e) => log::warn(
                    "cached component unusable, compiling again",
                    json!({"digest": digest, "err": e.to_string()}),
                ),
            }
        }
        let started = Instant::now();
        let compiled = Component::new(&self.engine, &bytes)
            .map_err(|e| format!("{}: {e}", wasm_path.display()))?;
        let serialized = compiled.serialize().map_err(|e| e.to_string())?;
        let aside = cached.with_extension(format!("tmp{}", std::process::id()));
        std::fs::write(&aside, &serialized)
            .and_then(|_| std::fs::rename(&aside, &cached))
            .map_err(|e| format!("{}: {e}", cached.display()))?;
        log::info(
            "component compiled",
            json!({"digest": digest, "ms": started.elapsed().as_millis() as u64, "bytes": serialized.len()}),
        );
        // Mapped from the file rather than kept on the heap: its pages are clean, shared
        // and given back under pressure.
        let component = unsafe { Component::deserialize_file(&self.engine, &cached) }
            .map_err(|e| e.to_string())?;
        Ok(self.remember(digest, component))
    }

    fn remember(&self, digest: String, component: Component) -> (String, Component) {
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
