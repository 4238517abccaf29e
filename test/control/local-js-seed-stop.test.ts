// The control plane stopped while it makes the js engine seed (control/src/local/js-seed.ts),
// with the real builder and maker on embedded defaults: stopped while the maker's sandboxed
// componentize step compiles the engine, through the control plane's own close. The maker and
// every process under it end; nothing of its work stays in the seeds directory, and no seed a
// later start could take as ready; the waiting build fails saying why; the next start on the
// same data directory makes the seed and builds from it. Needs root and bubblewrap, as the
// local runtime's builds.
import { readdirSync, readFileSync } from 'node:fs'
import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { buildAndWait, createApp, startTestControl, until } from '../helpers/control.js'
import type { BuildView } from '../helpers/control.js'

const BUILD_TIMEOUT = 240_000
t.setTimeout(3 * BUILD_TIMEOUT)

/** Every process under `root` (not itself), with its command line. */
function descendants(root: number): Array<{ pid: number; command: string }> {
  const children = new Map<number, number[]>()
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue
    try {
      // The parent is the second field after the command, which may hold spaces and parentheses.
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8')
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
      children.set(ppid, [...(children.get(ppid) ?? []), Number(name)])
    } catch {
      // Ended meanwhile.
    }
  }
  const found: Array<{ pid: number; command: string }> = []
  const walk = (pid: number): void => {
    for (const child of children.get(pid) ?? []) {
      let command = ''
      try {
        command = readFileSync(`/proc/${child}/cmdline`, 'utf8').replaceAll('\0', ' ')
      } catch {
        continue
      }
      found.push({ pid: child, command })
      walk(child)
    }
  }
  walk(root)
  return found
}

/** Whether `pid` still runs: a zombie has ended, whoever is left to reap it. */
function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z'
  } catch {
    return false
  }
}

t.test('stopped while making the seed: nothing runs or stays, and the next start makes it', async (t) => {
  const control = await startTestControl(t, 'pglite')
  const seeds = join(control.store.dataDir, 'toolchains', 'js-engine-seed')
  const app = await createApp(control, 'seed-stopped', { language: 'js' })
  const started = await control.call('POST', `/applications/${app.id}/builds`)
  t.equal(started.status, 202, started.text)
  const buildId = (started.body as BuildView).id

  let maker = 0
  await until(
    () => {
      const entry = control.logs.find((line) => line.msg === 'making the js engine seed')
      maker = Number(entry?.pid ?? 0)
      return maker > 0
    },
    60_000,
    'the maker to start',
  )
  // Stopped in its longest step, the engine's compile in the sandbox, not between steps.
  let under: Array<{ pid: number; command: string }> = []
  await until(
    () => {
      under = descendants(maker)
      // j2w itself: bwrap's own command line names it too, before the sandbox is up.
      return under.some(({ command }) => !command.includes('bwrap') && command.includes('build-tools/dist/index.js -i'))
    },
    BUILD_TIMEOUT,
    "the maker's componentize step",
  )
  t.ok(
    under.some(({ command }) => command.startsWith('prlimit') || command.includes('bwrap')),
    'the step runs in its sandbox',
  )
  t.ok(
    (await readdir(seeds)).some((name) => name.startsWith('.making-')),
    'the maker works in the seeds directory',
  )

  await control.close()
  t.notOk(running(maker), 'the maker ended with the close')
  // The sandbox ends with its parent, the maker (bwrap --die-with-parent): a moment later.
  await until(() => under.every(({ pid }) => !running(pid)), 10_000, "the maker's steps to end")
  t.pass(`the ${under.length} processes under it ended too`)
  t.same(await readdir(seeds), [], 'no seed and none of its work stays')

  const again = await startTestControl(t, 'pglite', undefined, { store: control.store })
  const stopped = (await again.call('GET', `/applications/${app.id}/builds/${buildId}`)).body as BuildView
  t.match(stopped, { status: 'failed', error: /the control plane stopped while the build was preparing/ })
  const build = await buildAndWait(t, again, app.id, BUILD_TIMEOUT)
  const log = (await again.call('GET', `/applications/${app.id}/builds/${build.id}/logs`)).text
  t.equal(build.status, 'succeeded', log)
  t.match(log, /js engine: making seed [0-9a-f]{64} \(the seed .* is missing\)/, 'made again, from nothing')
  t.match(log, /js engine: seed [0-9a-f]{64} made/)
  t.match(log, "js engine: compiled code copied from the machine's seed")
  const left = await readdir(seeds)
  t.equal(left.length, 1, left.join(' '))
  t.match(left[0], /^[0-9a-f]{64}$/, 'the seed alone')
})
