// What the seeds directory no longer needs once the seed for this engine is ready: the seeds of
// other engines (about 20 MB each, left by every componentize-js or wizer upgrade), and what a
// maker that died left behind. Only names the maker itself gives (make-js-seed.ts), only
// directories: a link, a file or a name of anyone else's making stays, and a link is never
// followed (lstat, rename and rm act on the link itself, never its target).
//
// Another control plane sharing the toolchains directory at another engine version may be
// copying its seed, or making it, while this one removes it. That costs it a compile, never a
// wrong seed: an old seed is first renamed away whole, so its name never holds half of one; a
// copy checks every file it copies against the sums and takes nothing else (copySeed); and a
// maker's seed appears under its name only complete (make-js-seed.ts). The other control plane
// makes its seed again at its next start.
import { randomBytes } from 'node:crypto'
import { lstat, readdir, rename, rm } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { MAKING_NAME } from '@session-relay/common/js-seed-making'

/** A seed: named by its key, sha256 in hex (js-seed-key.ts). */
const SEED = /^[0-9a-f]{64}$/
/** An old seed renamed away, whose removal did not finish. */
const REMOVING = /^\.removing-[0-9a-f]{16}$/

/**
 * A maker runs one build of the template, minutes at most; each of its steps stops at
 * BUILD_STEP_TIMEOUT (10 minutes by default). Its work untouched for a day is a dead maker's,
 * and a live one that slow loses only its seed: it fails, and builds compile the engine.
 */
export const STALE_MAKING_MS = 24 * 60 * 60 * 1000

/** Renames `path` (a directory of the seeds directory) away, then removes it: never half of it under its name. */
export async function removeWhole(path: string): Promise<void> {
  const away = join(dirname(path), `.removing-${randomBytes(8).toString('hex')}`)
  try {
    await rename(path, away)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return
    throw error
  }
  await rm(away, { recursive: true, force: true })
}

export type Pruned = { removed: string[]; failed: Array<{ name: string; reason: string }> }

/** Removes from `seeds` what the seed `key` makes unneeded (see above); one failure stops nothing else. */
export async function pruneSeeds(seeds: string, key: string, now = Date.now()): Promise<Pruned> {
  const pruned: Pruned = { removed: [], failed: [] }
  for (const name of await readdir(seeds)) {
    const path = join(seeds, name)
    try {
      const stats = await lstat(path)
      if (!stats.isDirectory()) continue
      if (SEED.test(name) && name !== key) {
        await removeWhole(path)
      } else if (REMOVING.test(name) || (MAKING_NAME.test(name) && now - stats.mtimeMs > STALE_MAKING_MS)) {
        await rm(path, { recursive: true, force: true })
      } else {
        continue
      }
      pruned.removed.push(name)
    } catch (error) {
      pruned.failed.push({ name, reason: (error as Error).message })
    }
  }
  return pruned
}
