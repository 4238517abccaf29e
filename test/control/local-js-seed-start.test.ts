// The js engine seed made from the control plane's start (--local-js-seed start, the default),
// the real builder and maker on embedded defaults: the maker starts with the control plane,
// before any build, and its sandboxed steps run in an autogroup of nice 19 (read from /proc
// while its componentize runs); the machine's first js build then finds the seed made and
// starts from a copy, waiting for nothing. Needs root and bubblewrap, as the local runtime's
// builds. The build waiting for a seed still being made is local-js-seed-maker.test.ts's.
import { readdir, readFile } from 'node:fs/promises'
import t from 'tap'
import { buildAndWait, createApp, startTestControl } from '../helpers/control.js'
import { until } from '../helpers/wait.js'

const BUILD_TIMEOUT = 240_000
t.setTimeout(3 * BUILD_TIMEOUT)

/** The pids of `pid`'s descendants. */
async function descendants(pid: number): Promise<number[]> {
  const parents = new Map<number, number>()
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue
    const stat = await readFile(`/proc/${name}/stat`, 'utf8').catch(() => '')
    // The parent is the second field after the command, which may hold spaces and parentheses.
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
    if (stat !== '') parents.set(Number(name), ppid)
  }
  const found: number[] = []
  const walk = (parent: number): void => {
    for (const [child, ppid] of parents)
      if (ppid === parent) {
        found.push(child)
        walk(child)
      }
  }
  walk(pid)
  return found
}

t.test("from the start: the seed made at the lowest priority, the machine's first js build finds it", async (t) => {
  const control = await startTestControl(t, 'pglite', ['--dev-insecure-skip-auth', '--local-js-seed', 'start'])
  let maker = 0
  await until(
    () => {
      const entry = control.logs.find((line) => line.msg === 'making the js engine seed')
      maker = typeof entry?.pid === 'number' ? entry.pid : 0
      t.equal(entry?.lowestPriority ?? true, true)
      return maker !== 0
    },
    30_000,
    'the maker started with the control plane',
  )
  // Its componentize step, in the sandbox: the step's autogroup, which the compile's threads share.
  let autogroup = ''
  await until(
    async () => {
      if (control.logs.some((line) => String(line.msg).startsWith('js engine seed'))) return true
      for (const pid of await descendants(maker)) {
        const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')
        if (cmdline.includes('build-tools') && !cmdline.startsWith('prlimit') && !cmdline.startsWith('bwrap'))
          autogroup = await readFile(`/proc/${pid}/autogroup`, 'utf8').catch(() => '')
      }
      return autogroup !== ''
    },
    BUILD_TIMEOUT,
    "the seed's componentize step",
  )
  t.match(autogroup, / nice 19\n$/, "the seed's componentize runs in an autogroup of nice 19")
  await until(() => control.logs.some((line) => line.msg === 'js engine seed ready'), BUILD_TIMEOUT, 'the seed made')

  const app = await createApp(control, 'seed-start', { language: 'js' })
  const build = await buildAndWait(t, control, app.id, BUILD_TIMEOUT)
  const log = (await control.call('GET', `/applications/${app.id}/builds/${build.id}/logs`)).text
  t.equal(build.status, 'succeeded', log)
  t.notMatch(log, /preparing the machine's seed|waiting for the machine's seed/, 'the seed was there')
  t.match(log, "js engine: compiled code copied from the machine's seed")
})
