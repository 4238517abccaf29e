// The embedded database's directory, made and checked before PGlite sees it. Node's
// mkdirSync(..., { recursive: true }) loops forever on a path the kernel answers ENOENT for
// although its parent exists (anything under /proc): the process then spins at full CPU
// without a word. PGlite on a directory it cannot use fails as obscurely. Every such start
// must instead end with one line that names the directory and the reason.
import { mkdirSync, statSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import { ConfigError } from '../errors.js'

/** Creates `dataDir` (and its parents) unless it exists; throws a ConfigError when it cannot be a usable directory. */
export function prepareDataDir (dataDir: string): void {
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

// mkdir -p that tries each level once: an ENOENT after its parent was made is final.
function makeDirectory (path: string): void {
  try {
    mkdirSync(path)
    return
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'EEXIST') return
    const parent = dirname(path)
    if (code !== 'ENOENT' || parent === path) throw error
  }
  makeDirectory(dirname(path))
  try {
    mkdirSync(path)
  } catch (error) {
    // Made by someone else in between: as good as made here.
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
  }
}
