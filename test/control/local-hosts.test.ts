// The local runtime's deployments, driven directly against the real worker with the probe
// function (test/helpers/worker-probe.ts): a worker killed from outside is started again after
// a backoff that doubles, says so in the status and the application's log, and every
// application is loaded again on its port; variables reach the function in the load command
// (the worker's environment is empty) on an artifact re-locked to declare them, and an artifact
// that cannot be re-locked, or that the worker refuses, leaves the running application alone; a
// removed application's port closes.
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import type { Test } from 'tap'
import { pullSpinApp } from '@session-relay/spin/artifact'
import { parseRef } from '@session-relay/spin/ref'
import { openStore } from '@session-relay/spin/store'
import { createLocalHosts } from '@session-relay/control/local/hosts'
import type { LocalHosts } from '@session-relay/control/local/hosts'
import { createLogger } from '@session-relay/control/logger'
import { capturedLogger } from '../helpers/captured-logger.js'
import { until } from '../helpers/wait.js'
import { SHARED_COMPILED, WORKER_BIN, ownCompiledDir, pushProbe } from '../helpers/worker-probe.js'

t.setTimeout(180_000)

// A removal prunes the compiled components no application of its worker uses: that test
// takes a copy of the shared directory rather than prune it under the others.
function hostsFor(
  t: Test,
  restartBackoff: { initialMs: number; maxMs: number },
  ownCache = false,
  threads?: number,
): { hosts: LocalHosts; dir: string; logs: string[]; workerPid: () => number } {
  const dir = t.testdir({ worker: {} })
  const { logger, logs } = capturedLogger()
  const hosts = createLocalHosts({
    logger,
    dir: join(dir, 'worker'),
    worker: () => WORKER_BIN,
    cacheDir: ownCache ? ownCompiledDir(join(dir, 'compiled')) : SHARED_COMPILED,
    restartBackoff,
    ...(threads === undefined ? {} : { threads }),
  })
  t.teardown(() => hosts.close())
  return { hosts, dir, logs, workerPid: () => Number(readFileSync(join(dir, 'worker', 'worker.pid'), 'utf8')) }
}

type Answer = { path: string; variable: { value?: string; error?: unknown } | null }

async function answer(hosts: LocalHosts, appId: string, path = '/'): Promise<{ url: string; body: Answer }> {
  // The first load compiles the probe when the shared cache does not hold it yet.
  const url = await hosts.url(appId, 120_000)
  if (typeof url !== 'string') throw new Error(`no url: ${String(url)}`)
  return { url, body: (await (await fetch(`${url}${path}`)).json()) as Answer }
}

function readLog(hosts: LocalHosts, appId: string): Promise<string> {
  return new Promise((resolve) => {
    let text = ''
    const stream = hosts.log(appId, { follow: false })!
    stream.on('data', (chunk: Buffer) => {
      text += chunk.toString('utf8')
    })
    stream.on('end', () => resolve(text))
  })
}

t.test(
  'a worker killed from outside is restarted with a doubling backoff, says so, and loads every application again on its port',
  async (t) => {
    const { hosts, dir, workerPid, logs } = hostsFor(t, { initialMs: 100, maxMs: 200 })
    const image = await pushProbe(`oci-layout:${join(dir, 'image')}:b1`)
    await hosts.deploy({ id: 'app1' }, image)
    await hosts.deploy({ id: 'app2' }, image)
    // Told at each restart, before the applications answer again (their loads are under way).
    const restarts: (boolean | undefined)[] = []
    hosts.onRestart(() => restarts.push(hosts.status('app2')?.ready))
    const first = await answer(hosts, 'app1', '/first')
    t.equal(first.body.path, '/first')
    const other = await answer(hosts, 'app2')
    t.match(hosts.status('app1'), { ready: true, running: true, message: '1 of 1 replicas ready', image })

    for (const expected of [100, 200, 200]) {
      const pid = workerPid()
      process.kill(pid, 'SIGKILL')
      await until(() => /restarting/.test(hosts.status('app1')?.message ?? ''), 5000, 'the exit noticed')
      t.match(hosts.status('app1'), {
        ready: false,
        running: false,
        url: null,
        message: new RegExp(`^the worker exited \\(SIGKILL\\); restarting in ${expected} ms`),
      })
      const again = await answer(hosts, 'app1', '/again')
      t.equal(again.url, first.url, 'the same port after the restart')
      t.not(workerPid(), pid, 'a new worker')
    }
    t.equal((await answer(hosts, 'app2')).url, other.url, 'every application is back')
    t.same(restarts, [false, false, false], 'onRestart: once per restart, before the loads are done')
    t.match(hosts.status('app1'), { ready: true, running: true, message: '1 of 1 replicas ready' })
    t.match(
      await readLog(hosts, 'app1'),
      /the worker exited \(SIGKILL\); restarting in 100 ms[^]*the worker restarted/,
      "the application's log says so",
    )
    t.match(logs.join(''), /"delayMs":100[^]*"delayMs":200[^]*"delayMs":200/)
  },
)

t.test("the worker gets the threads setting as its --threads; unset, the worker's own default", async (t) => {
  for (const threads of [undefined, 3]) {
    const { hosts, dir, workerPid } = hostsFor(t, { initialMs: 100, maxMs: 200 }, false, threads)
    await hosts.deploy({ id: 'app1' }, await pushProbe(`oci-layout:${join(dir, 'image')}:b1`))
    t.equal((await answer(hosts, 'app1')).body.path, '/')
    const argv = readFileSync(`/proc/${workerPid()}/cmdline`, 'utf8').split('\0')
    const at = argv.indexOf('--threads')
    t.equal(at === -1 ? undefined : argv[at + 1], threads === undefined ? undefined : '3', `threads: ${threads}`)
  }
})

t.test('the worker gets the memory budget as its --memory-budget-bytes and answers past it 503', async (t) => {
  const dir = t.testdir({ worker: {} })
  const budget = 256 * 2 ** 20
  const hosts = createLocalHosts({
    logger: createLogger('silent'),
    dir: join(dir, 'worker'),
    worker: () => WORKER_BIN,
    cacheDir: SHARED_COMPILED,
    memoryBudgetBytes: budget,
  })
  t.teardown(() => hosts.close())
  await hosts.deploy(
    { id: 'app1' },
    await pushProbe(`oci-layout:${join(dir, 'image')}:b1`),
    {},
    {
      memoryBytes: 512 * 2 ** 20,
    },
  )
  const { url } = await answer(hosts, 'app1')
  const refused = await fetch(`${url}/alloc?mb=220`)
  t.equal(refused.status, 503)
  t.match(await refused.text(), `the worker's memory budget of ${budget} bytes is in use`)
})

t.test('a removed application is not loaded again, its port closes, its compiled component is pruned', async (t) => {
  const { hosts, dir } = hostsFor(t, { initialMs: 10, maxMs: 10 }, true)
  await hosts.deploy({ id: 'app3' }, await pushProbe(`oci-layout:${join(dir, 'image')}:b1`))
  const { url } = await answer(hosts, 'app3')
  await hosts.remove('app3')
  t.equal(hosts.status('app3'), null)
  t.equal(await hosts.url('app3', 100), null)
  await t.rejects(fetch(url), 'nothing listens on its port')
  t.equal(hosts.log('app3', { follow: false }), null)
  t.same(readdirSync(join(dir, 'compiled')), [], 'no compiled component is left')
  t.same(readdirSync(join(dir, 'worker', 'wasm')), [], 'nor its pulled wasm')
})

t.test(
  "variables: the values in the load command and none in the worker's environment, on the artifact re-locked with their names",
  async (t) => {
    const { hosts, dir, workerPid } = hostsFor(t, { initialMs: 10, maxMs: 10 })
    const layout = join(dir, 'image')
    const image = await pushProbe(`oci-layout:${layout}:b1`)
    const store = await openStore(parseRef(image), { dockerConfigDir: null })

    await hosts.deploy({ id: 'app4' }, image, { greeting: 'hi-value', api_key: 'k-value' })
    const first = await answer(hosts, 'app4', '/?name=greeting')
    t.same(first.body.variable, { value: 'hi-value' }, 'the value, through fermyon:spin/variables')
    t.same((await answer(hosts, 'app4', '/?name=api_key')).body.variable, { value: 'k-value' })
    // Started with an empty environment (tap's coverage hook adds NODE_OPTIONS and _TAPJS_ settings to every child).
    const environment = readFileSync(`/proc/${workerPid()}/environ`, 'utf8')
      .split('\0')
      .filter((entry) => entry !== '' && !/^(_TAPJS_|NODE_OPTIONS=)/.test(entry))
    t.same(environment, [], 'the worker has no environment')
    const relocked = hosts.status('app4')?.image ?? ''
    t.match(relocked, new RegExp(`^oci-layout:${layout}@sha256:[0-9a-f]{64}$`))
    t.not(relocked, image, 'the worker runs the re-locked artifact')
    const lock = (await pullSpinApp(store, relocked.slice(relocked.indexOf('@') + 1))).lockedApp
    t.same(lock.variables, { api_key: {}, greeting: {} })
    t.same(lock.components[0]!.config, { api_key: '{{ api_key }}', greeting: '{{ greeting }}' })

    await hosts.deploy({ id: 'app4' }, image, {})
    t.match(hosts.status('app4'), {
      ready: false,
      running: true,
      url: first.url,
      message: 'loading the application into the worker; the previous version answers meanwhile',
    })
    await until(() => hosts.status('app4')?.ready === true, 60_000, 'the redeploy ready')
    const plain = await answer(hosts, 'app4', '/?name=greeting')
    t.match(plain.body.variable, { error: { tag: 'undefined' } }, 'no variables: the artifact as built')
    t.equal(hosts.status('app4')?.image, image)
    t.equal(plain.url, first.url, 'a redeploy keeps the port')

    await t.rejects(
      hosts.deploy({ id: 'app4' }, `oci-layout:${layout}@sha256:${'0'.repeat(64)}`, { greeting: 'x' }),
      /is not in/,
    )
    t.equal(
      hosts.status('app4')?.image,
      image,
      'an artifact that cannot be re-locked leaves the running application alone',
    )
    t.equal((await answer(hosts, 'app4')).body.path, '/')
    t.notMatch(await readLog(hosts, 'app4'), /hi-value|k-value/, 'no value in the log')
  },
)

t.test('an artifact the worker refuses: the status and the url say why', async (t) => {
  const { hosts, dir } = hostsFor(t, { initialMs: 10, maxMs: 10 })
  const image = await pushProbe(`oci-layout:${join(dir, 'image')}:b1`, { allowedOutboundHosts: ['not a host'] })
  await hosts.deploy({ id: 'app5' }, image)
  const url = await hosts.url('app5', 120_000)
  t.type(url, Error)
  t.match(String(url), /^Error: the application could not be loaded: /)
  t.match(hosts.status('app5'), { ready: false, running: false, message: /^the application could not be loaded/ })
})

t.test('a redeploy the worker refuses leaves the previous version answering, and the status says why', async (t) => {
  const { hosts, dir } = hostsFor(t, { initialMs: 10, maxMs: 10 })
  await hosts.deploy({ id: 'app6' }, await pushProbe(`oci-layout:${join(dir, 'image')}:b1`))
  const first = await answer(hosts, 'app6', '/first')
  await hosts.deploy(
    { id: 'app6' },
    await pushProbe(`oci-layout:${join(dir, 'image')}:b2`, { allowedOutboundHosts: ['not a host'] }),
  )
  await until(() => /could not be loaded/.test(hosts.status('app6')?.message ?? ''), 60_000, 'the load refused')
  t.match(hosts.status('app6'), {
    ready: false,
    running: true,
    url: first.url,
    message: /^the application could not be loaded: .*; the previous version answers meanwhile$/,
  })
  const again = await answer(hosts, 'app6', '/again')
  t.same({ url: again.url, path: again.body.path }, { url: first.url, path: '/again' }, 'the previous version answers')
})

t.test(
  'scale to zero: an application without a request past the idle timeout is unloaded, its URL still answering; the first request there loads it again',
  async (t) => {
    let clock = 1_000_000
    const dir = t.testdir({ worker: {} })
    const { logger } = capturedLogger()
    // The sweep runs often; the injected clock decides what is idle.
    let counted = new Map<string, number>()
    let sweeps = 0
    const hosts = createLocalHosts({
      logger,
      dir: join(dir, 'worker'),
      worker: () => WORKER_BIN,
      cacheDir: SHARED_COMPILED,
      idle: {
        timeoutMs: 60_000,
        sweepMs: 20,
        now: () => clock,
        swept: (counts) => {
          counted = new Map(counts)
          sweeps += 1
        },
      },
      restartBackoff: { initialMs: 10, maxMs: 10 },
    })
    t.teardown(() => hosts.close())
    const image = await pushProbe(`oci-layout:${join(dir, 'image')}:b1`)
    await hosts.deploy({ id: 'busy' }, image)
    await hosts.deploy({ id: 'sleepy' }, image)
    const sleepy = await answer(hosts, 'sleepy')
    const busy = await answer(hosts, 'busy')

    // The clock moves only once a sweep has read the requests so far: a count read late would
    // restart an application's idle time at the moved clock.
    await until(
      () => (counted.get('sleepy') ?? 0) >= 1 && (counted.get('busy') ?? 0) >= 1,
      5000,
      'a sweep that read both first requests',
    )
    clock += 59_000
    // Requests at its own URL count: the busy one is not idle when the timeout is up.
    const before = counted.get('busy') ?? 0
    await fetch(`${busy.url}/`).then((response) => response.text())
    await until(() => (counted.get('busy') ?? 0) > before, 5000, "a sweep that read the busy one's request")
    clock += 30_000
    await until(() => /^idle/.test(hosts.status('sleepy')?.message ?? ''), 5000, 'the idle application unloaded')
    t.match(hosts.status('sleepy'), {
      ready: true,
      idle: true,
      running: true,
      url: sleepy.url,
      message: /^idle: unloaded after 60 s without a request; the next request loads it again$/,
    })
    t.match(
      hosts.status('busy'),
      { ready: true, idle: false },
      'the one with a request at its URL within the timeout is still loaded',
    )
    await until(
      async () => ((await readLog(hosts, 'sleepy')).match(/idle for 60 s: unloaded/) ?? []).length > 0,
      5000,
      'the worker let it go',
    )

    // At its own URL, not through url(): the worker loads it again and answers.
    const woken = await fetch(`${sleepy.url}/woken`)
    t.same(
      { status: woken.status, path: ((await woken.json()) as Answer).path },
      { status: 200, path: '/woken' },
      'its URL answers the first request',
    )
    await until(() => hosts.status('sleepy')?.idle === false, 5000, "the worker's awake event")
    t.match(hosts.status('sleepy'), { ready: true, message: '1 of 1 replicas ready' })
    t.match(await readLog(hosts, 'sleepy'), /loaded again by a request at its URL/)

    // Idle again, then through url() (invoke): the same port answers. As above, the clock moves
    // once a sweep has counted the woken one: the second sweep from here, since the first may
    // have read the counts before the woken request was counted.
    const sweepsAtWake = sweeps
    await until(() => sweeps >= sweepsAtWake + 2, 5000, 'two sweeps after the woken request')
    clock += 120_000
    await until(
      () => hosts.status('sleepy')?.idle === true && hosts.status('busy')?.idle === true,
      5000,
      'both idle in their turn',
    )
    const again = await answer(hosts, 'sleepy', '/invoked')
    t.same({ url: again.url, path: again.body.path }, { url: sleepy.url, path: '/invoked' })

    // A worker restart brings the idle one back on its port, idle: its URL answers.
    process.kill(Number(readFileSync(join(dir, 'worker', 'worker.pid'), 'utf8')), 'SIGKILL')
    await until(() => hosts.status('busy')?.url === null, 5000, 'the exit noticed')
    await until(() => hosts.status('busy')?.url === busy.url, 10_000, 'the idle one back on its port')
    t.match(hosts.status('busy'), { ready: true, idle: true })
    t.equal((await fetch(`${busy.url}/`)).status, 200, 'and answering')
  },
)
