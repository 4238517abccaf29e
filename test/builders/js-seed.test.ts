// The js engine seed (builders/src/js-seed.ts, make-js-seed.ts): the real maker builds the
// platform's js template into a seeds directory only the builder's user (root here, as the local
// runtime's builds) can write; a new application's first build, by the real builder in its
// sandbox, starts from a copy of it (the same bytes, its own file, given to uid 65534), and
// never from another application's cache. A seed that is missing, writable by others, not the
// builder's, holding a link or an extra file, or changed since it was sealed is not used: the
// build compiles the engine as before. A copy takes exactly the files sealed: one appearing in
// the seed once it was checked is not copied, one gone from it fails the copy (the seed changed
// through a mocked fs as the copy starts). Once its seed is ready, the maker removes other
// engines' seeds and a dead maker's work, and nothing else (js-seed-prune.test.ts has the
// rules). Needs root and bubblewrap, as the local runtime's builds.
import { execFileSync, spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import * as fsPromises from 'node:fs/promises'
import {
  chmod,
  chown,
  lstat,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  rm,
  symlink,
  truncate,
  utimes,
  writeFile,
} from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import type { Test } from 'tap'
import { templateFiles } from '@session-relay/spin/templates'
import type * as JsSeed from '@session-relay/builders/js-seed'
import { copySeed, seedProblem } from '@session-relay/builders/js-seed'
import { childEnv, runBuilder, sourceArchive } from '../helpers/spin-processes.js'

t.setTimeout(600_000)

const MAKER = fileURLToPath(new URL('../../builders/dist/make-js-seed.js', import.meta.url))
const SANDBOX_UID = 65534
const ENTRIES = join('.cache', 'wasmtime', 'modules')

const root = await mkdtemp(join(tmpdir(), 'js-seed-'))
t.teardown(() => rm(root, { recursive: true, force: true }))
const seeds = join(root, 'seeds')

async function makeSeed(dir: string): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, [MAKER], {
    env: childEnv({ JS_ENGINE_SEEDS: dir }),
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk))
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk))
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve))
  return { code, output }
}

/** Every file under `home`'s wasmtime modules, by path relative to home. */
async function compiledEntries(home: string): Promise<string[]> {
  const found: string[] = []
  const modules = join(home, ENTRIES)
  if (!existsSync(modules)) return found
  for (const dir of await readdir(modules))
    for (const name of await readdir(join(modules, dir))) found.push(join(ENTRIES, dir, name))
  return found.sort()
}

/** The builder's run of the js template for `application` with its cache `cache`. */
async function build(
  tt: Test,
  application: string,
  cache: string,
  seedsDir: string,
): Promise<Awaited<ReturnType<typeof runBuilder>>> {
  const archive = await sourceArchive(tt, { name: application, language: 'js' }, [
    { name: 'hello', route: '/...', files: templateFiles('js', 'hello') },
  ])
  return await runBuilder(tt, {
    SOURCE_ARCHIVE: archive,
    IMAGE_REF: `oci-layout:${join(root, 'images', application)}:b1`,
    APPLICATION: application,
    LANGUAGE: 'js',
    BUILD_ID: 'b1',
    DEPENDENCY_CACHE: cache,
    JS_ENGINE_SEEDS: seedsDir,
  })
}

// Another engine's seed, from before an upgrade: the maker removes it once its own is made.
const OLD_KEY = 'b'.repeat(64)
await mkdir(join(seeds, OLD_KEY, 'home'), { recursive: true, mode: 0o700 })
await writeFile(join(seeds, OLD_KEY, 'files.json'), '{}', { mode: 0o600 })
const made = await makeSeed(seeds)
const key = /seed ([0-9a-f]{64}) made/.exec(made.output)?.[1] ?? ''
const seedHome = join(seeds, key, 'home')

t.test("the seed: the platform's template built, the builder user's alone", async (t) => {
  t.equal(made.code, 0, made.output)
  t.not(key, '', 'the seed is named by the engine files hash')
  t.match(made.output, `removed ${OLD_KEY}`)
  t.same(await readdir(seeds), [key], "the seed alone: another engine's is gone, and the maker's work")
  t.ok((await compiledEntries(seedHome)).length > 0, "it holds wasmtime's compiled engine")
  const walk = async (path: string): Promise<void> => {
    const stats = await lstat(path)
    t.equal(stats.uid, process.getuid?.(), `${path}: the builder's`)
    t.equal(stats.mode & 0o077, 0, `${path}: no one else may read or write it (uid ${SANDBOX_UID} neither)`)
    if (stats.isDirectory()) for (const name of await readdir(path)) await walk(join(path, name))
  }
  await walk(seeds)

  // Found there, the seed also prunes: another engine's seed holding a link out, a dead
  // maker's work; a link with a seed's name and a file of someone else's stay.
  const outside = join(root, 'outside')
  await mkdir(outside)
  await writeFile(join(outside, 'keep'), 'not the seeds')
  await mkdir(join(seeds, OLD_KEY, 'home'), { recursive: true, mode: 0o700 })
  await symlink(outside, join(seeds, OLD_KEY, 'home', 'link'))
  await symlink(outside, join(seeds, 'c'.repeat(64)))
  await writeFile(join(seeds, 'notes.txt'), 'an operator wrote this')
  const dead = join(seeds, '.making-Dead01')
  await mkdir(join(dead, 'cache'), { recursive: true })
  await utimes(dead, new Date(0), new Date(0))
  const again = await makeSeed(seeds)
  t.equal(again.code, 0)
  t.match(again.output, `seed ${key} is there`, 'made once: the next maker finds it')
  t.match(again.output, `removed ${OLD_KEY}`)
  t.match(again.output, 'removed .making-Dead01')
  t.same(
    (await readdir(seeds)).sort(),
    [key, 'c'.repeat(64), 'notes.txt'].sort(),
    'the current seed, and what is not ours',
  )
  t.same(await readdir(outside), ['keep'], "the links' target untouched")
  t.equal(await seedProblem(seeds, key), null, 'the seed whole')
  await rm(join(seeds, 'c'.repeat(64)))
  await rm(join(seeds, 'notes.txt'))
})

t.test("a new application's first build starts from a copy of the seed, never another application's", async (t) => {
  const first = join(root, 'caches', 'first')
  const second = join(root, 'caches', 'second')
  const seedEntries = await compiledEntries(seedHome)

  const a = await build(t, 'first', first, seeds)
  t.equal(a.code, 0, a.termination)
  t.match(a.log, `js engine: compiled code copied from the machine's seed ${key.slice(0, 12)}`)
  t.same(await compiledEntries(join(first, 'home')), seedEntries, 'the seed entries, and no other')
  for (const rel of seedEntries) {
    const copy = await lstat(join(first, 'home', rel))
    const original = await lstat(join(seedHome, rel))
    // wasmtime rewrites an entry's .stats (its use count) at every hit: the copy's own.
    if (!rel.endsWith('.stats'))
      t.ok(
        (await readFile(join(first, 'home', rel))).equals(await readFile(join(seedHome, rel))),
        `${rel}: the same bytes`,
      )
    t.not(copy.ino, original.ino, `${rel}: a copy, not a link`)
    t.equal(copy.nlink, 1)
    t.equal(copy.uid, SANDBOX_UID, `${rel}: the sandbox's, its own to change`)
  }

  // What the first application's builds may write into their own cache reaches no other.
  const planted = join(first, 'home', ENTRIES, 'planted')
  await mkdir(planted, { recursive: true })
  await writeFile(join(planted, 'code'), 'the first tenant wrote this')
  const b = await build(t, 'second', second, seeds)
  t.equal(b.code, 0, b.termination)
  t.match(b.log, "compiled code copied from the machine's seed")
  t.same(await compiledEntries(join(second, 'home')), seedEntries, "the seed's entries, none of the first's")
  t.equal(await seedProblem(seeds, key), null, 'the seed unchanged: its sums hold')

  const again = await build(t, 'first', first, seeds)
  t.equal(again.code, 0, again.termination)
  t.notMatch(again.log, /js engine:/, 'a later build keeps its own cache: no seed asked')
  t.ok(existsSync(join(planted, 'code')))
})

t.test('a seed that is missing, damaged or writable by others is not used', async (t) => {
  let variant = 0
  /** A copy of the real seeds directory (owners and modes kept), changed by `spoil`. */
  const spoiled = async (spoil: (seed: string, dir: string) => Promise<void>): Promise<string> => {
    const dir = join(root, `spoiled-${variant++}`)
    execFileSync('cp', ['-a', seeds, dir])
    await spoil(join(dir, key), dir)
    return dir
  }
  const seedEntriesRel = await compiledEntries(seedHome)
  const entry = (seed: string): string => join(seed, 'home', seedEntriesRel[0] as string)
  const cases: Array<[string, (seed: string, dir: string) => Promise<void>, RegExp]> = [
    ['missing', (seed) => rm(seed, { recursive: true }), /the seed .* is missing/],
    ['a file writable by others', (seed) => chmod(entry(seed), 0o666), /writable by others/],
    ['the seed writable by others', (seed) => chmod(seed, 0o777), /the seed is writable by others/],
    ['the seeds directory writable by others', (_, dir) => chmod(dir, 0o777), /the seeds directory is writable/],
    ['a file of the sandbox user', (seed) => chown(entry(seed), SANDBOX_UID, SANDBOX_UID), /belongs to uid 65534/],
    [
      'a link',
      (seed) => symlink('/etc/passwd', join(seed, 'home', '.cache', 'link')),
      /neither a file nor a directory/,
    ],
    [
      'an extra file',
      (seed) => writeFile(join(seed, 'home', '.cache', 'extra'), 'x', { mode: 0o600 }),
      /not the ones sealed/,
    ],
    ['a changed file', (seed) => truncate(entry(seed), 100), /is not what was sealed/],
  ]
  for (const [what, spoil, reason] of cases) {
    const dir = await spoiled(spoil)
    const home = join(root, 'caches', `spoiled-${variant}`, 'home')
    await mkdir(join(home, '..'), { recursive: true })
    t.match(await copySeed(dir, key, home), reason, `${what}: not used`)
    t.notOk(existsSync(home), `${what}: nothing copied`)
    const left = (await readdir(join(home, '..'))).filter((name) => name.startsWith('home.seeding'))
    t.same(left, [], `${what}: no half copy left`)
  }

  // Through the builder: a changed seed, and the build compiles the engine itself.
  const dir = await spoiled((seed) => truncate(entry(seed), 100))
  const cache = join(root, 'caches', 'compiles')
  const built = await build(t, 'compiles', cache, dir)
  t.equal(built.code, 0, built.termination)
  t.match(built.log, /js engine: no seed used \(.* is not what was sealed\); this build compiles the engine/)
  const compiled = join(cache, 'home', seedEntriesRel[0] as string)
  t.ok((await lstat(compiled)).size > 100, 'its own compiled engine, not the changed bytes')
})

/** The files under `dir`, by path relative to it: none when it is missing. */
async function filesOf(dir: string): Promise<string[]> {
  if (!existsSync(dir)) return []
  return (await readdir(dir, { recursive: true, withFileTypes: true }))
    .filter((found) => found.isFile())
    .map((found) => relative(dir, join(found.parentPath, found.name)))
    .sort()
}

let meanwhileRuns = 0
/**
 * copySeed from a copy of the seeds directory, with `meanwhile` run on its seed after the seed
 * was checked, as the copy starts. Returns its reason and the home it copied to.
 */
async function copyWhile(t: Test, meanwhile: (seed: string) => Promise<void>): Promise<[string | null, string]> {
  const run = meanwhileRuns++
  const dir = join(root, `meanwhile-${run}`)
  execFileSync('cp', ['-a', seeds, dir])
  let ran = false
  const jsSeed = await t.mockImport<typeof JsSeed>('../../builders/dist/js-seed.js', {
    'node:fs/promises': {
      ...fsPromises,
      // Its first directory beside home: the seed was checked, nothing copied yet.
      mkdir: async (...args: Parameters<typeof fsPromises.mkdir>) => {
        const made = await fsPromises.mkdir(...args)
        if (!ran && String(args[0]).includes('.seeding-')) {
          ran = true
          await meanwhile(join(dir, key))
        }
        return made
      },
    },
  })
  const home = join(root, 'caches', `meanwhile-${run}`, 'home')
  const reason = await jsSeed.copySeed(dir, key, home)
  t.ok(ran, 'the seed changed while copying')
  return [reason, home]
}

t.test('a copy takes the files sealed, not one that appeared in the seed since', async (t) => {
  const sealed = Object.keys(JSON.parse(await readFile(join(seeds, key, 'files.json'), 'utf8')) as object).sort()
  const entry = (await compiledEntries(seedHome))[0] as string
  const [reason, home] = await copyWhile(t, async (seed) => {
    await writeFile(join(seed, 'home', entry, '..', 'appeared'), 'x', { mode: 0o600 })
    await mkdir(join(seed, 'home', 'new'), { mode: 0o700 })
    await writeFile(join(seed, 'home', 'new', 'file'), 'x', { mode: 0o600 })
  })
  t.equal(reason, null, 'copied all the same')
  t.same(await filesOf(home), sealed, 'the files sealed, and no other')
})

t.test('a file gone from the seed since it was checked fails the copy', async (t) => {
  const entry = (await compiledEntries(seedHome))[0] as string
  const [reason, home] = await copyWhile(t, (seed) => rm(join(seed, 'home', entry)))
  t.equal(reason, `${entry} is gone from the seed`)
  t.notOk(existsSync(home), 'nothing copied')
  const left = (await readdir(join(home, '..'))).filter((name) => name.startsWith('home.seeding'))
  t.same(left, [], 'no half copy left')
})
