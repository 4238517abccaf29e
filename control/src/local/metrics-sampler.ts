// The worker's counters (its `stats`: per application, and per component its latency buckets
// and 5xx answers) turned into what happened since the last sample, for the embedded metrics
// store. The worker counts from its start: an application seen for the first time counts from
// zero, and a counter found lower than last time (the worker restarted) counts from zero again,
// as Prometheus's rate() takes a reset.
import type { EmbeddedMetrics } from '../metrics/embedded.js'
import { LATENCY_BUCKETS } from '../metrics/embedded-series.js'

type ComponentCounters = { latency: number[]; errors: number }
type AppCounters = { cpuMs: number; memoryBytes: number; components: Map<string, ComponentCounters> }

/** What `stats` says of one application, read defensively: a field missing counts as zero. */
function countersOf(raw: unknown): AppCounters {
  const app = (raw ?? {}) as { cpuMs?: unknown; memoryBytes?: unknown; components?: unknown }
  const components = new Map<string, ComponentCounters>()
  for (const [id, value] of Object.entries((app.components ?? {}) as Record<string, unknown>)) {
    const c = (value ?? {}) as { latency?: unknown; errors?: unknown }
    const latency = Array.isArray(c.latency) ? c.latency.map(Number) : []
    components.set(id, { latency, errors: Number(c.errors ?? 0) })
  }
  return { cpuMs: Number(app.cpuMs ?? 0), memoryBytes: Number(app.memoryBytes ?? 0), components }
}

/** Since `before`: the difference, or the whole count when the counter went back (a reset). */
const since = (now: number, before: number | undefined): number =>
  before === undefined || now < before ? now : now - before

const wentBack = (now: ComponentCounters, before: ComponentCounters): boolean =>
  now.errors < before.errors || before.latency.some((n, b) => (now.latency[b] ?? 0) < n)

/** A source for `metrics.addSource`: one `stats` per call, its differences recorded. */
export function workerSampler(
  metrics: EmbeddedMetrics,
  stats: () => Promise<Record<string, unknown> | null>,
): () => Promise<void> {
  let last = new Map<string, AppCounters>()
  return async () => {
    const apps = await stats()
    if (apps === null) return
    const seen = new Map<string, AppCounters>()
    for (const [appId, raw] of Object.entries(apps)) {
      const now = countersOf(raw)
      const before = last.get(appId)
      seen.set(appId, now)
      const cpuMicros = since(now.cpuMs, before?.cpuMs) * 1000
      // Nothing to say (idle, unloaded): nothing written; the gauge reads 0 where nothing is.
      if (cpuMicros > 0 || now.memoryBytes > 0) metrics.recordApp(appId, { cpuMicros, memoryBytes: now.memoryBytes })
      for (const [component, counters] of now.components) {
        let previous = before?.components.get(component)
        // One counter back means all of them started again, not that one did.
        if (previous !== undefined && wentBack(counters, previous)) previous = undefined
        const latency = Array.from({ length: LATENCY_BUCKETS }, (_, b) =>
          since(counters.latency[b] ?? 0, previous?.latency[b]),
        )
        const errors = since(counters.errors, previous?.errors)
        // A quiet function writes nothing: its file stays sparse.
        if (errors > 0 || latency.some((n) => n > 0)) metrics.recordFunction(appId, component, { latency, errors })
      }
    }
    // Applications gone from the worker are forgotten: if one comes back, its counters start anew.
    last = seen
  }
}
