// The machine's js engine seed (make-js-seed.ts makes it): wasmtime's cache of the compiled
// componentize-js engine, from a build of the platform's own js template, copied into an
// application's cache home before its first js build so that build skips the engine's compile
// (bench/RESULTS.md, issue 43). The seed is native code every later js build runs, so it is
// used only when nothing but the builder's own user could have written it: the seeds
// directory, the seed and all it holds owned by that user and writable by no one else, only
// regular files and directories, each file's bytes those recorded when it was sealed. Anything
// else: not used, and the build compiles the engine as it did before. Copied, never linked: an
// application's build may change its own copy and nothing else.
import { createHash } from 'node:crypto'
import type { Stats } from 'node:fs'
import { existsSync } from 'node:fs'
import { chmod, copyFile, lchown, lstat, mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'

/** In a seed: the cache home as the template's build left it, and the sha256 of each of its files. */
const HOME = 'home'
const SUMS = 'files.json'

type Entry = { rel: string; path: string; stats: Stats }

async function entries(dir: string, rel = ''): Promise<Entry[]> {
  const found: Entry[] = []
  for (const name of (await readdir(dir)).sort()) {
    const path = join(dir, name)
    const stats = await lstat(path)
    const entry = { rel: rel === '' ? name : `${rel}/${name}`, path, stats }
    found.push(entry)
    if (stats.isDirectory()) found.push(...(await entries(path, entry.rel)))
  }
  return found
}

async function sha256(path: string): Promise<string> {
  return createHash('sha256')
    .update(await readFile(path))
    .digest('hex')
}

const ownUid = (): number => process.getuid?.() ?? 0
const ownGid = (): number => process.getgid?.() ?? 0

/** Why `path` (as lstat saw it) could have been written by someone else, or null. */
function notOurs(what: string, stats: Stats): string | null {
  if (!stats.isDirectory() && !stats.isFile()) return `${what} is neither a file nor a directory`
  if (stats.uid !== ownUid()) return `${what} belongs to uid ${stats.uid}, not the builder's`
  if ((stats.mode & 0o022) !== 0) return `${what} is writable by others (mode ${(stats.mode & 0o777).toString(8)})`
  return null
}

/**
 * Makes `home` (a cache home the platform's own template build filled) the seed `seed`: given to
 * the builder's user, readable by it alone, its files' sums recorded. `seed` must not exist.
 */
export async function sealSeed(home: string, seed: string): Promise<void> {
  const sums: Record<string, string> = {}
  for (const entry of await entries(home)) {
    if (entry.stats.isSymbolicLink() || (!entry.stats.isDirectory() && !entry.stats.isFile()))
      throw new Error(`the seed build left ${entry.rel}, neither a file nor a directory`)
    await lchown(entry.path, ownUid(), ownGid())
    await chmod(entry.path, entry.stats.isDirectory() ? 0o700 : 0o600)
    if (entry.stats.isFile()) sums[entry.rel] = await sha256(entry.path)
  }
  if (!Object.keys(sums).some((rel) => rel.startsWith('.cache/wasmtime/')))
    throw new Error('the seed build left no wasmtime cache entry')
  await lchown(home, ownUid(), ownGid())
  await chmod(home, 0o700)
  await mkdir(seed, { mode: 0o700 })
  await rename(home, join(seed, HOME))
  await writeFile(join(seed, SUMS), JSON.stringify(sums), { mode: 0o600 })
}

type Sums = Record<string, string>

/** Why the seed `key` in `seeds` may not be used, or null when it may. */
export async function seedProblem(seeds: string, key: string): Promise<string | null> {
  const checked = await checkSeed(seeds, key)
  return 'problem' in checked ? checked.problem : null
}

/** The seed's sums, once it is found sound; else why it may not be used. */
async function checkSeed(seeds: string, key: string): Promise<{ problem: string } | { sums: Sums }> {
  const seed = join(seeds, key)
  for (const [what, path] of [
    ['the seeds directory', seeds],
    ['the seed', seed],
    ['its home', join(seed, HOME)],
    ['its sums', join(seed, SUMS)],
  ] as const) {
    let stats: Stats
    try {
      stats = await lstat(path)
    } catch {
      return { problem: `${what} ${path} is missing` }
    }
    const problem = notOurs(what, stats)
    if (problem !== null) return { problem }
  }
  let sums: Sums
  try {
    sums = JSON.parse(await readFile(join(seed, SUMS), 'utf8')) as Sums
  } catch {
    return { problem: 'its sums do not parse' }
  }
  const files = new Set<string>()
  for (const entry of await entries(join(seed, HOME))) {
    const problem = notOurs(entry.rel, entry.stats)
    if (problem !== null) return { problem }
    if (entry.stats.isFile()) files.add(entry.rel)
  }
  const recorded = Object.keys(sums)
  if (recorded.length !== files.size || recorded.some((rel) => !files.has(rel)))
    return { problem: 'its files are not the ones sealed' }
  return { sums }
}

/**
 * Copies the seed into `home` (the application's cache home, which must not exist yet): into a
 * directory beside it, each copy's bytes checked against the sums, then renamed, so `home`
 * either holds the whole seed or does not exist. Returns why it was not copied, or null.
 */
export async function copySeed(seeds: string, key: string, home: string): Promise<string | null> {
  const checked = await checkSeed(seeds, key)
  if ('problem' in checked) return checked.problem
  const { sums } = checked
  const from = join(seeds, key, HOME)
  // Its own name: two builds of one application may start at once.
  const copying = `${home}.seeding-${process.pid}`
  // The application's cache itself may not exist yet (a builder run by hand); private, as the
  // local runtime makes it.
  await mkdir(dirname(home), { recursive: true, mode: 0o700 })
  await rm(copying, { recursive: true, force: true })
  await mkdir(copying, { mode: 0o755 })
  try {
    // The files sealed (the check above found the seed's home holding exactly those), not
    // what the home holds now: one appearing there since is not taken, one gone fails the copy.
    for (const [rel, sum] of Object.entries(sums)) {
      const to = join(copying, rel)
      await mkdir(dirname(to), { recursive: true, mode: 0o755 })
      try {
        await copyFile(join(from, rel), to)
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return `${rel} is gone from the seed`
        throw error
      }
      await chmod(to, 0o644)
      if ((await sha256(to)) !== sum) return `${rel} is not what was sealed`
    }
    if (existsSync(home)) return `${home} appeared meanwhile`
    await rename(copying, home)
    return null
  } finally {
    await rm(copying, { recursive: true, force: true })
  }
}
