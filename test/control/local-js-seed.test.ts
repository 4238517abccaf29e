// The js engine seed through the local runtime (control/src/local/js-seed.ts), the real builder
// and maker on embedded defaults but the tests' `--local-js-seed first-build` (test-env.ts; the
// default, from the start, is local-js-seed-start.test.ts's): the machine's first js build
// makes the seed in the toolchains directory and waits for it, then starts from a copy; a
// second application's first build (ts
// here) finds the compiled engine already in its own cache home, the seed's bytes, without
// making anything; the seed is never the sandbox user's; an application's later build asks
// for no seed. Needs root and bubblewrap, as the local runtime's builds.
import { existsSync } from 'node:fs'
import { lstat, readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import type { Test } from 'tap'
import { buildAndWait, createApp, startTestControl } from '../helpers/control.js'
import type { TestControl } from '../helpers/control.js'

const BUILD_TIMEOUT = 240_000
t.setTimeout(3 * BUILD_TIMEOUT)

const SANDBOX_UID = 65534

async function buildLog(t: Test, control: TestControl, appId: string): Promise<{ status: string; log: string }> {
  const build = await buildAndWait(t, control, appId, BUILD_TIMEOUT)
  const log = await control.call('GET', `/applications/${appId}/builds/${build.id}/logs`)
  return { status: build.status, log: log.text }
}

/** The compiled entries under a cache home, relative to it. */
async function entries(home: string): Promise<string[]> {
  const modules = join(home, '.cache', 'wasmtime', 'modules')
  const found: string[] = []
  for (const dir of await readdir(modules))
    for (const name of await readdir(join(modules, dir)))
      if (!name.endsWith('.stats')) found.push(join('.cache', 'wasmtime', 'modules', dir, name))
  return found
}

t.test("a second application's first build finds the engine compiled in its own cache, from the seed", async (t) => {
  const control = await startTestControl(t, 'pglite')
  const seeds = join(control.store.dataDir, 'toolchains', 'js-engine-seed')
  const dependencies = join(control.store.dataDir, 'runtime', 'dependencies')

  const first = await createApp(control, 'seed-first', { language: 'js' })
  const made = await buildLog(t, control, first.id)
  t.equal(made.status, 'succeeded', made.log)
  t.match(made.log, "js engine: preparing the machine's seed")
  t.match(made.log, /js engine: seed [0-9a-f]{64} made/)
  t.match(made.log, "js engine: compiled code copied from the machine's seed")
  const [key] = (await readdir(seeds)).filter((name) => !name.startsWith('.'))
  t.match(key, /^[0-9a-f]{64}$/, 'one seed, named by the engine')
  const seedHome = join(seeds, key as string, 'home')

  const second = await createApp(control, 'seed-second', { language: 'ts' })
  const before = new Set(await readdir(dependencies))
  const seeded = await buildLog(t, control, second.id)
  t.equal(seeded.status, 'succeeded', seeded.log)
  t.notMatch(seeded.log, 'preparing', 'the seed is made once')
  t.match(seeded.log, "js engine: compiled code copied from the machine's seed")
  const [cache] = (await readdir(dependencies)).filter((name) => !before.has(name))
  const home = join(dependencies, cache as string, 'home')
  const compiled = await entries(seedHome)
  t.ok(compiled.length > 0)
  t.same(await entries(home), compiled, "the seed's entry, in the application's own home")
  for (const rel of compiled) {
    t.ok((await readFile(join(home, rel))).equals(await readFile(join(seedHome, rel))), `${rel}: the same bytes`)
    t.equal((await lstat(join(home, rel))).uid, SANDBOX_UID, "the copy is the sandbox user's")
  }
  for (const path of [seeds, join(seeds, key as string), seedHome, ...compiled.map((rel) => join(seedHome, rel))]) {
    const stats = await lstat(path)
    t.not(stats.uid, SANDBOX_UID, `${path}: never the sandbox user's`)
    t.equal(stats.mode & 0o022, 0, `${path}: writable by no one else`)
  }

  const again = await buildLog(t, control, first.id)
  t.equal(again.status, 'succeeded', again.log)
  t.notMatch(again.log, /js engine:/, 'a later build keeps its own cache')
  t.ok(existsSync(seedHome))
})
