// The embedded database belongs to one process. PGlite has no lock of its own: a second
// process on the same directory crashes at start, or worse, writes beside the first. A file
// holding the owner's pid makes the second start fail with a message that says why.
import { closeSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import { ConfigError } from '@session-relay/common/config/settings'

const LOCK_FILE = 'control.pid'

/** Takes the directory for this process; the returned function gives it back. */
export function lockDataDir(dataDir: string): () => void {
  const path = join(dataDir, LOCK_FILE)
  // Twice at most: the second try follows the removal of a lock its owner left behind.
  for (let attempt = 0; attempt < 2; attempt++) {
    let fd: number
    try {
      fd = openSync(path, 'wx', 0o600)
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST')
        throw new ConfigError(`cannot write to --data-dir ${dataDir}: ${(error as Error).message}`)
      const owner = ownerOf(path)
      if (owner !== null && isRunning(owner)) {
        throw new ConfigError(
          `--data-dir ${dataDir} is in use by process ${owner}: one control plane per embedded database (or set --database-url)`,
        )
      }
      unlinkSync(path)
      continue
    }
    writeSync(fd, `${process.pid}\n`)
    closeSync(fd)
    return () => {
      // Only our own lock: never one another process took after ours was judged stale.
      if (ownerOf(path) === process.pid) unlinkSync(path)
    }
  }
  throw new ConfigError(`cannot lock --data-dir ${dataDir}: another process is starting on it`)
}

function ownerOf(path: string): number | null {
  try {
    const pid = Number(readFileSync(path, 'utf8').trim())
    return Number.isSafeInteger(pid) && pid > 0 ? pid : null
  } catch {
    return null
  }
}

// Our own pid in the file is a lock from an earlier life: a container restarted on the same
// volume is pid 1 again.
function isRunning(pid: number): boolean {
  if (pid === process.pid) return false
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    // EPERM: it runs, as another user.
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}
