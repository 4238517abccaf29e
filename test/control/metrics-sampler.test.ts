// The worker's counters become what happened since the last sample (issue 43): from zero for an
// application first seen, from zero again after a reset (a worker restarted), nothing written
// for a quiet function; and a source that fails keeps the API's own counts from nothing.
import t from 'tap'
import { workerSampler } from '@session-relay/control/local/metrics-sampler'
import type { AppSample, EmbeddedMetrics, FunctionSample } from '@session-relay/control/metrics/embedded'
import { createEmbeddedMetrics } from '@session-relay/control/metrics/embedded'
import { LATENCY_BUCKETS } from '@session-relay/control/metrics/embedded-series'

function recorder(): {
  metrics: EmbeddedMetrics
  apps: Array<[string, AppSample]>
  functions: Array<[string, string, FunctionSample]>
} {
  const apps: Array<[string, AppSample]> = []
  const functions: Array<[string, string, FunctionSample]> = []
  const metrics = {
    recordApp: (appId: string, sample: AppSample) => apps.push([appId, sample]),
    recordFunction: (appId: string, component: string, sample: FunctionSample) =>
      functions.push([appId, component, sample]),
  } as unknown as EmbeddedMetrics
  return { metrics, apps, functions }
}

const latency = (counts: Record<number, number>): number[] =>
  Array.from({ length: LATENCY_BUCKETS }, (_, b) => counts[b] ?? 0)

t.test('differences of the counters, a reset counted from zero, quiet functions not written', async (t) => {
  const { metrics, apps, functions } = recorder()
  let stats: Record<string, unknown> | null = null
  const sample = workerSampler(metrics, async () => stats)
  await sample()
  t.same(apps, [], 'no worker, nothing')

  stats = {
    a: { cpuMs: 2.5, memoryBytes: 100, components: { f: { latency: latency({ 2: 3 }), errors: 1 } } },
    idle: { cpuMs: 0, memoryBytes: 0, components: {} },
  }
  await sample()
  t.same(apps, [['a', { cpuMicros: 2500, memoryBytes: 100 }]], 'first sight: all of it; an idle app writes nothing')
  t.same(functions, [['a', 'f', { latency: latency({ 2: 3 }), errors: 1 }]])

  apps.length = 0
  functions.length = 0
  stats = {
    a: {
      cpuMs: 3,
      memoryBytes: 0,
      components: { f: { latency: latency({ 2: 3 }), errors: 1 }, g: { latency: latency({ 5: 2 }), errors: 0 } },
    },
  }
  await sample()
  t.same(apps, [['a', { cpuMicros: 500, memoryBytes: 0 }]])
  t.same(functions, [['a', 'g', { latency: latency({ 5: 2 }), errors: 0 }]], 'f was quiet: nothing written')

  functions.length = 0
  // The worker restarted: one count went back, so every count started again.
  stats = { a: { cpuMs: 1, memoryBytes: 0, components: { f: { latency: latency({ 2: 1, 3: 4 }), errors: 0 } } } }
  await sample()
  t.same(functions, [['a', 'f', { latency: latency({ 2: 1, 3: 4 }), errors: 0 }]])
  t.same(apps.at(-1), ['a', { cpuMicros: 1000, memoryBytes: 0 }])
})

t.test("a failing source does not keep the API's counts from being written", async (t) => {
  let now = 1_800_000_000_000
  const errors: unknown[] = []
  const store = createEmbeddedMetrics({
    dir: t.testdir(),
    retentionMs: 3_600_000,
    now: () => now,
    sampleMs: 0,
    onError: (error) => errors.push(error),
  })
  t.teardown(() => store.close())
  store.addSource(() => Promise.reject(new Error('the worker is restarting')))
  store.recordRequest('/api/v1/applications')
  await store.sample()
  t.equal(errors.length, 1)
  now += 15_000
  const overview = store.overview({ rangeMs: 60_000, stepMs: 15_000, rateWindowMs: 60_000 }, null)
  t.equal(overview.httpRequestRate.points.at(-1)?.[1], 1 / 60)
})
