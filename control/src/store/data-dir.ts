// The embedded database's directory, made and checked before PGlite sees it. Node's
// mkdirSync(..., { recursive: true }) loops forever on a path the kernel answers ENOENT for
// although its parent exists (anything under /proc): the process then spins at full CPU
// without a word. PGlite on a directory it cannot use fails as obscurely. Every such start
// must instead end with one line that names the directory and the reason.
// The directory holds the stored sources, plain variables and the generated secret key: it is
// owner-only (0700), made so or repaired at start, whatever the umask.
import { chmodSync, lstatSync, mkdirSync, readdirSync, statSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { ConfigError } from '@session-relay/common/config/settings'

/** Creates `dataDir` (and its parents) unless it exists, owner-only; throws a ConfigError when it cannot be a usable directory. */
export function prepareDataDir(dataDir: string): void {
  try {
    makeDirectory(resolve(dataDir))
  } catch (error) {
    throw new ConfigError(`cannot create --data-dir ${dataDir}: ${(error as Error).message}`)
  }
  let isDirectory: boolean
  try {
    isDirectory = statSync(dataDir).isDirectory()
  } catch (error) {
    throw new ConfigError(`cannot use --data-dir ${dataDir}: ${(error as Error).message}`)
  }
  if (!isDirectory) throw new ConfigError(`cannot use --data-dir ${dataDir}: it is not a directory`)
  // Whether it is writable is learnt by writing: the lock file is the first write (data-dir-lock.ts).
  // access(W_OK) would lie to root, which passes it even where the kernel refuses the write.
}

/**
 * Takes group and other permissions off `dataDir` (once a write in it proved it is ours to
 * change); returns what it repaired, for the log, or null.
 */
export function makeOwnerOnly(dataDir: string): string | null {
  const mode = statSync(dataDir).mode & 0o777
  if ((mode & 0o077) === 0) return null
  try {
    chmodSync(dataDir, 0o700)
  } catch (error) {
    throw new ConfigError(
      `--data-dir ${dataDir} is open to other users (mode ${mode.toString(8)}) and cannot be made owner-only: ${(error as Error).message}`,
    )
  }
  return `--data-dir ${dataDir} was open to other users (mode ${mode.toString(8)}): made owner-only (700)`
}

/**
 * Takes group and other permissions off everything under `dir` (symbolic links are left,
 * never followed). PGlite creates its files 0666 whatever the umask; the directory's 0700 is
 * what keeps the ones it makes while running from other users.
 */
export function restrictTree(dir: string): void {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isSymbolicLink()) continue
    const mode = lstatSync(path).mode & 0o777
    if ((mode & 0o077) !== 0) chmodSync(path, mode & 0o700)
    if (entry.isDirectory()) restrictTree(path)
  }
}

// mkdir -p that tries each level once: an ENOENT after its parent was made is final.
function makeDirectory(path: string): void {
  try {
    mkdirSync(path, { mode: 0o700 })
    return
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'EEXIST') return
    const parent = dirname(path)
    if (code !== 'ENOENT' || parent === path) throw error
  }
  makeDirectory(dirname(path))
  try {
    mkdirSync(path, { mode: 0o700 })
  } catch (error) {
    // Made by someone else in between: as good as made here.
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
  }
}
