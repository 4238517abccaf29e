// The embedded store's answers, computed as the PromQL of queries.ts computes them from
// Prometheus's samples: a rate is what the steps of the rate window hold over their span, a
// p95 is histogram_quantile over the window's bucket counts, a gauge is its latest sample. The
// points are those of a query_range over the same window (series.ts), so a chart cannot tell
// which store answered.
import type { Point } from './prometheus.js'

/** The latency buckets' upper bounds in ms: the worker's (worker/src/stats.rs), then +Inf. */
export const LATENCY_BOUNDS_MS: readonly number[] = [
  0.25, 0.5, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768,
]
const LAST_BOUND_MS = 32768
export const LATENCY_BUCKETS = LATENCY_BOUNDS_MS.length + 1

/** The steps of one series over a query: `records[i]` is step `firstStep + i`, null when it has none. */
export type StepRecords = { firstStep: number; records: Array<Uint32Array | null> }

export type Grid = {
  /** The points' times, in ms. */
  times: number[]
  /** The store's step, in ms. */
  resolutionMs: number
  /** The rate window, in ms (queries.ts's rateWindowMs). */
  windowMs: number
}

/** The points of a query_range: start to end, one per step, both ends included. */
export function gridTimes(endMs: number, rangeMs: number, stepMs: number): number[] {
  const times: number[] = []
  for (let t = endMs - rangeMs; t <= endMs; t += stepMs) times.push(t)
  return times
}

/** The first step a query over `grid` reads (the oldest rate window's first). */
export function firstStepOf(grid: Grid): number {
  return Math.floor(((grid.times[0] ?? 0) - grid.windowMs) / grid.resolutionMs)
}

/** The steps whose start lies in [t - window, t): what a point at `t` sums over. */
function windowSteps(grid: Grid, t: number): { from: number; to: number } {
  return { from: Math.ceil((t - grid.windowMs) / grid.resolutionMs), to: Math.ceil(t / grid.resolutionMs) - 1 }
}

/** Per second, over each point's window: the sum of `pick` over its steps divided by their span. */
export function rateSeries(grid: Grid, steps: StepRecords, pick: (fields: Uint32Array) => number, scale = 1): Point[] {
  return grid.times.map((t) => {
    const { from, to } = windowSteps(grid, t)
    let sum = 0
    for (let step = from; step <= to; step++) {
      const record = steps.records[step - steps.firstStep]
      if (record !== null && record !== undefined) sum += pick(record)
    }
    const seconds = ((to - from + 1) * grid.resolutionMs) / 1000
    return [t / 1000, seconds > 0 ? (sum * scale) / seconds : 0]
  })
}

/**
 * The latest value of a gauge before each point, looking back two steps (one sample may land a
 * step late); 0 where there is none: an application not loaded holds no memory.
 */
export function gaugeSeries(grid: Grid, steps: StepRecords, pick: (fields: Uint32Array) => number, scale = 1): Point[] {
  return grid.times.map((t) => {
    const last = Math.ceil(t / grid.resolutionMs) - 1
    for (let step = last; step >= last - 1; step--) {
      const record = steps.records[step - steps.firstStep]
      if (record !== null && record !== undefined) return [t / 1000, pick(record) * scale]
    }
    return [t / 1000, 0]
  })
}

/**
 * histogram_quantile(q) over each point's window, in ms; no point where the window saw no
 * request (Prometheus's NaN, which it leaves out too). `offset` is where the buckets start in
 * a record.
 */
export function quantileSeries(grid: Grid, steps: StepRecords, q: number, offset: number): Point[] {
  const points: Point[] = []
  const counts = new Array<number>(LATENCY_BUCKETS)
  for (const t of grid.times) {
    counts.fill(0)
    const { from, to } = windowSteps(grid, t)
    for (let step = from; step <= to; step++) {
      const record = steps.records[step - steps.firstStep]
      if (record === null || record === undefined) continue
      for (let b = 0; b < LATENCY_BUCKETS; b++) counts[b] = (counts[b] ?? 0) + (record[offset + b] ?? 0)
    }
    const value = quantile(q, counts)
    if (value !== null) points.push([t / 1000, value])
  }
  return points
}

/** Prometheus's histogram_quantile over non-cumulative bucket counts: linear within a bucket. */
export function quantile(q: number, counts: readonly number[]): number | null {
  const total = counts.reduce((a, b) => a + b, 0)
  if (total === 0) return null
  const rank = q * total
  let below = 0
  for (let b = 0; b < counts.length; b++) {
    const count = counts[b] ?? 0
    if (below + count >= rank && count > 0) {
      // Past the last bound Prometheus answers the last bound: it knows no more.
      const upper = LATENCY_BOUNDS_MS[b]
      if (upper === undefined) return LAST_BOUND_MS
      const lower = LATENCY_BOUNDS_MS[b - 1] ?? 0
      return lower + (upper - lower) * ((rank - below) / count)
    }
    below += count
  }
  return LAST_BOUND_MS
}
