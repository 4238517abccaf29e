// Metrics on one machine without Prometheus (issue 43), on the real worker: the requests sent to
// an application's URL come back as the function's request rate, error rate and p95 (within the
// histogram's resolution), its CPU and memory as the application's, the API's own requests and
// builds as the overview; a restart keeps them. The embedded store's clock is injected and it
// samples only when told: nothing waits on the real clock.
import t from 'tap'
import type { Test } from 'tap'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { toolchainCheck } from '@session-relay/control/local/programs'
import { LATENCY_BOUNDS_MS } from '@session-relay/control/metrics/embedded-series'
import { createApp, firstFunction, startTestControl, until } from '../helpers/control.js'
import type { Store, TestControl } from '../helpers/control.js'
import { writeStandIns } from '../fixtures/local-programs.js'
import { SHARED_COMPILED } from '../helpers/worker-probe.js'

t.setTimeout(300_000)

// A whole number of minutes, so the points of a 15 s or 5 s step fall on the store's steps.
const T1 = 1_800_000_000_000
type Series = { points: Array<[number, number]>; unit: string }
type Metrics = { range: string; step: string; series: Record<string, Series> }

let now = T1 - 60_000

async function startLocal(t: Test, store?: Store): Promise<TestControl> {
  const dir = mkdtempSync(join(tmpdir(), 'local-metrics-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  return startTestControl(
    t,
    'pglite',
    ['--dev-insecure-skip-auth', '--runtime', 'local', '--local-cache-dir', SHARED_COMPILED],
    {
      ...(store === undefined ? {} : { store }),
      deps: {
        local: { ...writeStandIns(dir), toolchains: toolchainCheck('', undefined, process.env.PATH) },
        metricsClock: () => now,
        metricsSampleMs: 0,
      },
    },
  )
}

async function metrics(control: TestControl, path: string): Promise<Metrics> {
  const reply = await control.call('GET', path)
  if (reply.status !== 200) throw new Error(`${path}: ${reply.status} ${reply.text}`)
  return reply.body as Metrics
}

/** The value of the point at `ms`, or undefined when there is none. */
const at = (series: Series | undefined, ms: number): number | undefined =>
  series?.points.find(([seconds]) => seconds * 1000 === ms)?.[1]

const bucketAbove = (ms: number): number => LATENCY_BOUNDS_MS.find((bound) => bound >= ms) ?? Infinity

t.test('requests, errors, p95, CPU and memory from the worker; the API and builds; a restart keeps them', async (t) => {
  const first = await startLocal(t)
  const embedded = first.server.embeddedMetrics
  if (embedded === null) throw new Error('no embedded metrics without --prometheus-url')
  // The stand-in builder's component is `f`: so is the function, by the application's name.
  const app = await createApp(first, 'f', { language: 'js' })
  const fn = firstFunction(app)
  const put = await first.call('PUT', `/applications/${app.id}/functions/${fn.id}/source`, {
    json: { files: { 'index.js': 'export default 1\n' } },
  })
  t.equal(put.status, 200)
  const build = (await first.call('POST', `/applications/${app.id}/builds`)).body as { id: string }
  let url = ''
  await until(
    async () => {
      const got = (await first.call('GET', `/applications/${app.id}`)).body as {
        deployment: { ready: boolean; internalUrl: string } | null
      }
      url = got.deployment?.internalUrl ?? ''
      return got.deployment?.ready === true
    },
    120_000,
    `build ${build.id} deployed`,
  )
  // The first request waits for the worker's load; then the counts so far go to an older step.
  t.equal((await fetch(`${url}/`)).status, 200)
  await embedded.sample()
  const cpuMsNow = async (): Promise<number> => {
    const stats = (await first.server.local?.hosts.stats()) as Record<string, { cpuMs?: number }> | null
    return stats?.[app.id]?.cpuMs ?? NaN
  }
  const cpuBefore = await cpuMsNow()

  now = T1
  const fast = 40
  const slow = 4
  const failing = 3
  const clientMs: number[] = []
  const timed = async (path: string): Promise<number> => {
    const started = performance.now()
    const reply = await fetch(`${url}${path}`)
    await reply.arrayBuffer()
    clientMs.push(performance.now() - started)
    return reply.status
  }
  for (let i = 0; i < fast; i++) t.equal(await timed('/'), 200)
  for (let i = 0; i < slow; i++) t.equal(await timed('/spin?ms=80'), 200)
  // No outgoing host is allowed: the probe answers 502, an error.
  for (let i = 0; i < failing; i++) t.equal(await timed('/fetch?url=http://example.com/'), 502)
  const cpuAfter = await cpuMsNow()
  await embedded.sample()

  // The window of the point at T1 + 15 s is [T1 - 45 s, T1 + 15 s): the step at T1 and no other.
  now = T1 + 20_000
  const fnPath = `/applications/${app.id}/functions/${fn.id}/metrics?range=5m&step=15s`
  const fnMetrics = await metrics(first, fnPath)
  const sent = fast + slow + failing
  t.equal(at(fnMetrics.series.requestRate, T1 + 15_000), sent / 60, 'the requests sent, per second over 1 min')
  t.equal(at(fnMetrics.series.errorRate, T1 + 15_000), failing / 60, 'the 502s')
  // The true p95 is a slow request's: at least 80 ms, at most what the client waited for it.
  const p95 = at(fnMetrics.series.latencyP95, T1 + 15_000) ?? NaN
  const clientP95 = [...clientMs].sort((a, b) => a - b)[Math.ceil(0.95 * clientMs.length) - 1] ?? NaN
  t.ok(
    p95 >= 64 && p95 <= bucketAbove(clientP95),
    `p95 ${p95} ms in the bucket of the slow ones (client ${clientP95} ms)`,
  )
  t.equal(fnMetrics.series.requestRate?.unit, 'req/s')
  t.equal(fnMetrics.series.latencyP95?.unit, 'ms')
  const appPath = `/applications/${app.id}/metrics?range=5m&step=15s`
  const cpu = at((await metrics(first, appPath)).series.cpu, T1 + 15_000) ?? NaN
  // The worker's CPU time for these requests (its threads' own clock), over the minute.
  t.ok(Math.abs(cpu - (cpuAfter - cpuBefore) / 1000 / 60) < 1e-6, `cpu ${cpu} cores`)
  t.ok(cpu > 0)

  // Memory is what the instances hold at the sample: one is held by a request in flight.
  now = T1 + 30_000
  const held = fetch(`${url}/spin?ms=2000`).then((reply) => reply.arrayBuffer())
  await until(
    async () => {
      const stats = (await first.server.local?.hosts.stats()) as Record<string, { running?: number }> | null
      return (stats?.[app.id]?.running ?? 0) > 0
    },
    30_000,
    'the request running',
  )
  await embedded.sample()
  await held
  now = T1 + 35_000
  const memory = at(
    (await metrics(first, `/applications/${app.id}/metrics?range=5m&step=5s`)).series.memory,
    T1 + 35_000,
  )
  t.ok((memory ?? 0) > 0, `memory ${memory} bytes while a request ran`)

  const overview = await metrics(first, '/overview/metrics?range=15m&step=15s')
  const total = (series: Series | undefined): number => (series?.points ?? []).reduce((sum, [, v]) => sum + v, 0)
  t.ok(total(overview.series.httpRequestRate) > 0, 'the API answered requests')
  t.ok(total(overview.series.buildRate) > 0, 'a build finished')

  // A restart: the same data directory, a new process and worker; the series are as they were.
  await first.close()
  now = T1 + 60_000
  const second = await startLocal(t, first.store)
  const again = await metrics(second, fnPath)
  t.equal(at(again.series.requestRate, T1 + 15_000), sent / 60, 'kept across the restart')
  t.equal(at(again.series.latencyP95, T1 + 15_000), p95)
  t.equal(
    total((await metrics(second, '/overview/metrics?range=15m&step=15s')).series.buildRate),
    total(overview.series.buildRate),
  )
})
