//! Which directory and files the cache may map: compiled code is native code the worker
//! runs, so only what the worker's own uid could have written, and nobody else could change.

use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::Path;

/// Why the cache directory, or a compiled file in it, is not the worker's own.
#[derive(Debug, thiserror::Error)]
pub enum Untrusted {
    #[error("cannot create it: {0}")]
    Create(std::io::Error),
    #[error("{0}")]
    Unreadable(std::io::Error),
    #[error("not a directory")]
    NotDirectory,
    #[error("not a regular file")]
    NotFile,
    #[error("owned by uid {owner}, not by the worker's uid {uid}")]
    Owner { owner: u32, uid: u32 },
    #[error("mode {0:o} lets other users write to it (chmod go-w, or 700)")]
    Writable(u32),
}

/// Makes the cache directory (owner-only) when it is missing, then refuses one that another
/// user owns or may write to: a file planted there would be mapped and run as native code
/// (`deserialize_file` trusts what it reads), so such a directory must stop the start.
pub fn prepare_dir(dir: &Path) -> Result<(), Untrusted> {
    if !dir.exists() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(Untrusted::Create)?;
    }
    let meta = std::fs::metadata(dir).map_err(Untrusted::Unreadable)?;
    if !meta.is_dir() {
        return Err(Untrusted::NotDirectory);
    }
    private_to_us(&meta)
}

/// Owned by the worker's own uid, and writable by no group or other user.
fn private_to_us(meta: &std::fs::Metadata) -> Result<(), Untrusted> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let uid = unsafe { libc::geteuid() };
    if meta.uid() != uid {
        return Err(Untrusted::Owner {
            owner: meta.uid(),
            uid,
        });
    }
    let mode = meta.mode() & 0o7777;
    if mode & 0o022 != 0 {
        return Err(Untrusted::Writable(mode));
    }
    Ok(())
}

/// Whether a compiled file is one this worker could have written: a regular file (not a
/// link elsewhere) that is ours and nobody else's to change.
pub(super) fn trusted_file(path: &Path) -> Result<(), Untrusted> {
    let meta = std::fs::symlink_metadata(path).map_err(Untrusted::Unreadable)?;
    if !meta.file_type().is_file() {
        return Err(Untrusted::NotFile);
    }
    private_to_us(&meta)
}
