//! Which directory and files the cache may map: compiled code is native code the worker
//! runs, so only what the worker's own uid could have written, and nobody else could change.

use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::Path;

/// Makes the cache directory (owner-only) when it is missing, then refuses one that another
/// user owns or may write to: a file planted there would be mapped and run as native code
/// (`deserialize_file` trusts what it reads), so such a directory must stop the start.
pub fn prepare_dir(dir: &Path) -> Result<(), String> {
    if !dir.exists() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| format!("cannot create it: {e}"))?;
    }
    let meta = std::fs::metadata(dir).map_err(|e| e.to_string())?;
    if !meta.is_dir() {
        return Err("not a directory".into());
    }
    private_to_us(&meta)
}

/// Owned by the worker's own uid, and writable by no group or other user.
fn private_to_us(meta: &std::fs::Metadata) -> Result<(), String> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let uid = unsafe { libc::geteuid() };
    if meta.uid() != uid {
        return Err(format!(
            "owned by uid {}, not by the worker's uid {uid}",
            meta.uid()
        ));
    }
    let mode = meta.mode() & 0o7777;
    if mode & 0o022 != 0 {
        return Err(format!(
            "mode {mode:o} lets other users write to it (chmod go-w, or 700)"
        ));
    }
    Ok(())
}

/// Whether a compiled file is one this worker could have written: a regular file (not a
/// link elsewhere) that is ours and nobody else's to change.
pub(super) fn trusted_file(path: &Path) -> Result<(), String> {
    let meta = std::fs::symlink_metadata(path).map_err(|e| e.to_string())?;
    if !meta.file_type().is_file() {
        return Err("not a regular file".into());
    }
    private_to_us(&meta)
}
