// Metrics without Prometheus: the control plane keeps its own series in the data directory
// (metrics/), one ring file per series (ring-file.ts) of RESOLUTION_MS steps over the
// retention, so they survive a restart and never grow. What goes in: the local runtime's
// samples of the worker's counters (local/metrics-sampler.ts) and this process's own HTTP
// requests and finished builds. What comes out: the three metrics endpoints' series, computed
// as their PromQL would (embedded-series.ts).
import { existsSync, mkdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import type { Grid, StepRecords } from './embedded-series.js'
import { LATENCY_BUCKETS, firstStepOf, gaugeSeries, gridTimes, quantileSeries, rateSeries } from './embedded-series.js'
import type { Point } from './prometheus.js'
import type { RingFile } from './ring-file.js'
import { openRingFile, saturatingAdd } from './ring-file.js'

/** One step of every series: the worker's `stats` are read this often. */
export const RESOLUTION_MS = 10_000

// Fields of each kind of series, in their records.
const APP_FIELDS = 2 // cpu µs, memory KiB (latest)
const FUNCTION_FIELDS = 1 + LATENCY_BUCKETS // errors, then requests per latency bucket
const CONTROL_FIELDS = 2 // HTTP requests, finished builds

/** Per second over the window; `stepMs` the query's step, `rateWindowMs` its rate window. */
export type EmbeddedWindow = { rangeMs: number; stepMs: number; rateWindowMs: number }

type Series = { points: Point[]; unit: string }

/** What one sample of an application adds: its CPU time since the last, its memory now. */
export type AppSample = { cpuMicros: number; memoryBytes: number }
/** What one sample of a function adds: its requests per latency bucket and its 5xx answers. */
export type FunctionSample = { latency: readonly number[]; errors: number }

export type EmbeddedMetrics = {
  readonly now: () => number
  /** An answered HTTP request of this process (probes and scrapes are left out, as in queries.ts). */
  recordRequest(route: string | undefined, tenant?: string | null): void
  recordBuild(tenant?: string): void
  recordApp(appId: string, sample: AppSample): void
  recordFunction(appId: string, component: string, sample: FunctionSample): void
  /** Every source's sample (the worker's), then this process's counts since the last, written at now(). */
  sample(): Promise<void>
  /** Another source of samples, called by sample(). */
  addSource(source: () => Promise<void>): void
  /** The application is deleted: its series go. */
  forgetApp(appId: string): void
  application(appId: string, window: EmbeddedWindow): { cpu: Series; memory: Series }
  function(
    appId: string,
    component: string,
    window: EmbeddedWindow,
  ): { requestRate: Series; latencyP95: Series; errorRate: Series }
  /** `tenants` null: the whole platform's; else the sum of theirs. */
  overview(window: EmbeddedWindow, tenants: string[] | null): { httpRequestRate: Series; buildRate: Series }
  /** Writes what is counted and stops sampling. */
  close(): Promise<void>
}

export type EmbeddedOptions = {
  /** The data directory's metrics/ folder. */
  dir: string
  retentionMs: number
  now?: () => number
  /** How often sample() runs by itself; 0: only when called (tests). */
  sampleMs?: number
  onError?: (error: unknown) => void
}

const NOT_TRAFFIC = new Set(['/metrics', '/healthz'])

// Names from outside (tenants, component ids) as file names: nothing but [A-Za-z0-9_-].
const fileName = (name: string): string => Buffer.from(name, 'utf8').toString('base64url') || '_'

export function createEmbeddedMetrics(options: EmbeddedOptions): EmbeddedMetrics {
  const now = options.now ?? Date.now
  const slots = Math.ceil(options.retentionMs / RESOLUTION_MS)
  const appsDir = join(options.dir, 'apps')
  const tenantsDir = join(options.dir, 'tenants')
  mkdirSync(appsDir, { recursive: true, mode: 0o700 })
  mkdirSync(tenantsDir, { recursive: true, mode: 0o700 })
  const files = new Map<string, RingFile>()
  const ring = (path: string, fields: number, create: boolean): RingFile | null => {
    let file = files.get(path)
    if (file === undefined) {
      if (!create && !existsSync(path)) return null
      file = openRingFile(path, slots, fields)
      files.set(path, file)
    }
    return file
  }
  const appDir = (appId: string): string => join(appsDir, fileName(appId))
  const appFile = (appId: string, create: boolean): RingFile | null => {
    if (create) mkdirSync(appDir(appId), { recursive: true, mode: 0o700 })
    return ring(join(appDir(appId), 'app'), APP_FIELDS, create)
  }
  const functionFile = (appId: string, component: string, create: boolean): RingFile | null => {
    if (create) mkdirSync(appDir(appId), { recursive: true, mode: 0o700 })
    return ring(join(appDir(appId), `fn-${fileName(component)}`), FUNCTION_FIELDS, create)
  }
  const controlFile = (tenant: string | null, create: boolean): RingFile | null =>
    tenant === null
      ? ring(join(options.dir, 'control'), CONTROL_FIELDS, create)
      : ring(join(tenantsDir, fileName(tenant)), CONTROL_FIELDS, create)

  // This process's counts since the last sample, by tenant (null: the platform's).
  const pending = new Map<string | null, [number, number]>()
  const count = (tenant: string | null, field: 0 | 1): void => {
    const counts = pending.get(tenant) ?? [0, 0]
    counts[field]++
    pending.set(tenant, counts)
  }
  const flush = (): void => {
    const step = Math.floor(now() / RESOLUTION_MS)
    for (const [tenant, counts] of pending) {
      controlFile(tenant, true)?.update(step, (fields) => {
        fields[0] = saturatingAdd(fields[0] ?? 0, counts[0])
        fields[1] = saturatingAdd(fields[1] ?? 0, counts[1])
      })
    }
    pending.clear()
  }

  const sources: Array<() => Promise<void>> = []
  let sampling: Promise<void> | null = null
  const sample = (): Promise<void> => {
    // One at a time: two would read the same counters and count the difference twice.
    sampling ??= (async () => {
      try {
        // A source that fails (the worker restarting) keeps none of the others from being written.
        for (const source of sources) await source().catch((error: unknown) => options.onError?.(error))
        flush()
      } finally {
        sampling = null
      }
    })()
    return sampling
  }
  const timer =
    (options.sampleMs ?? RESOLUTION_MS) > 0
      ? setInterval(() => {
          sample().catch((error: unknown) => options.onError?.(error))
        }, options.sampleMs ?? RESOLUTION_MS)
      : null
  timer?.unref()

  const stepsOf = (file: RingFile | null, grid: Grid): StepRecords => {
    const firstStep = firstStepOf(grid)
    const lastStep = Math.ceil((grid.times[grid.times.length - 1] ?? 0) / RESOLUTION_MS) - 1
    if (file === null) return { firstStep, records: [] }
    return { firstStep, records: file.read(firstStep, lastStep) }
  }
  const gridOf = (window: EmbeddedWindow): Grid => {
    // As series.ts asks Prometheus: ending at the last whole step.
    const endMs = Math.floor(now() / window.stepMs) * window.stepMs
    return {
      times: gridTimes(endMs, window.rangeMs, window.stepMs),
      resolutionMs: RESOLUTION_MS,
      windowMs: window.rateWindowMs,
    }
  }

  return {
    now,
    recordRequest(route, tenant) {
      if (route !== undefined && NOT_TRAFFIC.has(route)) return
      count(null, 0)
      if (tenant !== undefined && tenant !== null) count(tenant, 0)
    },
    recordBuild(tenant) {
      count(null, 1)
      if (tenant !== undefined) count(tenant, 1)
    },
    recordApp(appId, sample) {
      appFile(appId, true)?.update(Math.floor(now() / RESOLUTION_MS), (fields) => {
        fields[0] = saturatingAdd(fields[0] ?? 0, sample.cpuMicros)
        fields[1] = Math.min(0xffff_ffff, Math.ceil(sample.memoryBytes / 1024))
      })
    },
    recordFunction(appId, component, sample) {
      functionFile(appId, component, true)?.update(Math.floor(now() / RESOLUTION_MS), (fields) => {
        fields[0] = saturatingAdd(fields[0] ?? 0, sample.errors)
        for (let b = 0; b < LATENCY_BUCKETS; b++)
          fields[1 + b] = saturatingAdd(fields[1 + b] ?? 0, sample.latency[b] ?? 0)
      })
    },
    sample,
    addSource(source) {
      sources.push(source)
    },
    forgetApp(appId) {
      for (const path of files.keys()) if (path.startsWith(appDir(appId) + '/')) files.delete(path)
      rmSync(appDir(appId), { recursive: true, force: true })
    },
    application(appId, window) {
      const grid = gridOf(window)
      const steps = stepsOf(appFile(appId, false), grid)
      return {
        cpu: { points: rateSeries(grid, steps, (f) => f[0] ?? 0, 1e-6), unit: 'cores' },
        memory: { points: gaugeSeries(grid, steps, (f) => f[1] ?? 0, 1024), unit: 'bytes' },
      }
    },
    function(appId, component, window) {
      const grid = gridOf(window)
      const steps = stepsOf(functionFile(appId, component, false), grid)
      const requests = (f: Uint32Array): number => {
        let sum = 0
        for (let b = 1; b <= LATENCY_BUCKETS; b++) sum += f[b] ?? 0
        return sum
      }
      return {
        requestRate: { points: rateSeries(grid, steps, requests), unit: 'req/s' },
        latencyP95: { points: quantileSeries(grid, steps, 0.95, 1), unit: 'ms' },
        errorRate: { points: rateSeries(grid, steps, (f) => f[0] ?? 0), unit: 'req/s' },
      }
    },
    overview(window, tenants) {
      const grid = gridOf(window)
      const series = (tenants === null ? [null] : tenants).map((tenant) => stepsOf(controlFile(tenant, false), grid))
      const sum = (pick: (f: Uint32Array) => number): Point[] => {
        const each = series.map((steps) => rateSeries(grid, steps, pick))
        return grid.times.map((t, i) => [t / 1000, each.reduce((total, points) => total + (points[i]?.[1] ?? 0), 0)])
      }
      return {
        httpRequestRate: { points: sum((f) => f[0] ?? 0), unit: 'req/s' },
        buildRate: { points: sum((f) => f[1] ?? 0), unit: 'builds/s' },
      }
    },
    async close() {
      if (timer !== null) clearInterval(timer)
      await sampling
      flush()
    },
  }
}
