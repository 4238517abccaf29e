// The embedded metrics store without a worker (issue 43): its ring files (fixed size, a lap
// overwrites, reopened as they were), histogram_quantile as Prometheus computes it, rates over
// the rate window, and the retention bound, on an injected clock: nothing here waits.
import { statSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { createEmbeddedMetrics, RESOLUTION_MS } from '@session-relay/control/metrics/embedded'
import { LATENCY_BUCKETS, quantile } from '@session-relay/control/metrics/embedded-series'
import { openRingFile } from '@session-relay/control/metrics/ring-file'

const HOUR = 3_600_000
// A whole number of steps, so a point's rate window holds whole steps.
const T0 = 1_800_000_000_000

const values = (records: Array<Uint32Array | null>): Array<number[] | null> =>
  records.map((r) => (r === null ? null : Array.from(r)))

t.test('a ring file keeps one record per step, a lap overwrites, and it never grows', async (t) => {
  const path = join(t.testdir(), 'series')
  const ring = openRingFile(path, 10, 2)
  ring.update(5, (f) => {
    f[0] = 7
  })
  ring.update(12, (f) => {
    f[1] = 4
  })
  ring.update(12, (f) => {
    f[1] = (f[1] ?? 0) + 1
  })
  t.same(values(ring.read(4, 6)), [null, [7, 0], null])
  t.same(values(ring.read(11, 13)), [null, [0, 5], null])
  const size = statSync(path).size
  // Step 15 is step 5's place a lap later: 5 is gone, read as absent rather than as 15's.
  ring.update(15, (f) => {
    f[0] = 1
  })
  t.same(values(ring.read(5, 5)), [null])
  t.same(values(ring.read(15, 15)), [[1, 0]])
  // More than a lap asked for: the steps older than the ring are absent.
  t.equal(ring.read(0, 20).filter((r) => r !== null).length, 2)
  t.equal(ring.read(0, 25).filter((r) => r !== null).length, 0, 'past a lap from the end asked for')
  t.equal(statSync(path).size, size)
  t.same(values(openRingFile(path, 10, 2).read(12, 15)), [[0, 5], null, null, [1, 0]], 'reopened as it was')
  t.same(values(openRingFile(path, 20, 2).read(12, 15)), [null, null, null, null], 'another shape starts empty')
})

t.test('the p95 is histogram_quantile over the buckets', async (t) => {
  const counts = new Array<number>(LATENCY_BUCKETS).fill(0)
  t.equal(quantile(0.95, counts), null, 'no request, no value')
  // 100 requests in (1 ms, 2 ms]: the rank 95 is 95 % of the way through that bucket.
  counts[3] = 100
  t.equal(quantile(0.95, counts), 1.95)
  // 90 under 0.25 ms, 10 in (64, 128]: the rank 95 is half way into the slow ones.
  counts.fill(0)
  counts[0] = 90
  counts[9] = 10
  t.equal(quantile(0.95, counts), 96)
  counts.fill(0)
  counts[LATENCY_BUCKETS - 1] = 1
  t.equal(quantile(0.95, counts), 32768, 'past the last bound: the last bound')
})

t.test('rates are per second over the rate window, and the retention bounds them', async (t) => {
  let now = T0
  const dir = t.testdir()
  const store = createEmbeddedMetrics({ dir, retentionMs: 24 * HOUR, now: () => now, sampleMs: 0 })
  t.teardown(() => store.close())
  const latency = new Array<number>(LATENCY_BUCKETS).fill(0)
  latency[3] = 60
  store.recordFunction('app1', 'fn', { latency, errors: 6 })
  store.recordApp('app1', { cpuMicros: 3_000_000, memoryBytes: 5 * 1024 * 1024 })
  for (let i = 0; i < 30; i++) store.recordRequest('/api/v1/applications', i < 10 ? 'acme' : null)
  store.recordRequest('/healthz')
  store.recordRequest('/metrics')
  store.recordBuild('acme')
  await store.sample()

  // The window ends at the last whole step: the step holding the counts ends 10 s later.
  now = T0 + RESOLUTION_MS + 5_000
  const window = { rangeMs: 5 * 60_000, stepMs: 15_000, rateWindowMs: 60_000 }
  const fn = store.function('app1', 'fn', window)
  const last = (points: Array<[number, number]>): number => points[points.length - 1]?.[1] ?? NaN
  t.equal(fn.requestRate.points.length, 21, 'the points of a query_range: 5m / 15s, both ends')
  t.equal(last(fn.requestRate.points), 1, '60 requests over the 60 s window')
  t.equal(last(fn.errorRate.points), 0.1)
  t.equal(last(fn.latencyP95.points), 1.95)
  t.equal(fn.latencyP95.points.length, 1, 'no p95 where the window saw no request')
  const app = store.application('app1', window)
  t.equal(last(app.cpu.points), 0.05, '3 s of CPU over 60 s')
  t.equal(last(app.memory.points), 5 * 1024 * 1024)
  const overview = store.overview(window, null)
  t.equal(last(overview.httpRequestRate.points), 0.5, 'probes and scrapes are not traffic')
  t.equal(last(overview.buildRate.points), 1 / 60)
  t.equal(last(store.overview(window, ['acme']).httpRequestRate.points), 10 / 60)
  t.equal(last(store.overview(window, ['other']).httpRequestRate.points), 0)

  // One request an hour for 30 hours: a 24h query sees the last day's, the file never grows.
  const fnFile = join(
    dir,
    'apps',
    Buffer.from('app1').toString('base64url'),
    `fn-${Buffer.from('fn').toString('base64url')}`,
  )
  const size = statSync(fnFile).size
  t.equal(size, 16 + ((24 * HOUR) / RESOLUTION_MS) * 4 * (2 + LATENCY_BUCKETS), 'a 24 h ring: 8,640 steps of 84 bytes')
  latency.fill(0)
  latency[0] = 1
  for (let hour = 1; hour < 30; hour++) {
    now = T0 + hour * HOUR
    store.recordFunction('app1', 'fn', { latency, errors: 0 })
  }
  t.equal(statSync(fnFile).size, size)
  now = T0 + 29 * HOUR + 30_000
  const day = { rangeMs: 24 * HOUR, stepMs: 60_000, rateWindowMs: 120_000 }
  const sum = (points: Array<[number, number]>): number => points.reduce((total, [, v]) => total + v, 0)
  // Each request is in two points' 120 s windows, 1/120 req/s in each. Hours 5 to 28 are in
  // the range; hour 5's step is the one hour 29's took, 24 h later: 23 remain.
  t.equal(Math.round(sum(store.function('app1', 'fn', day).requestRate.points) * 60), 23)

  store.forgetApp('app1')
  t.equal(last(store.application('app1', window).cpu.points), 0, 'a deleted application has no series')
})
