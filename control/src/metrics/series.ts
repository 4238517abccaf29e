// Metrics series from Prometheus: the window a query asks for (defaults, bounds) and one
// query_range per series over it. The routes in http/routes/metrics.ts only pick the queries.
import { formatDuration, parseDuration } from '@session-relay/common/config/duration'
import type { MetricsSettings } from './settings.js'
import { InvalidInputError, UnavailableError } from '@session-relay/common/errors'
import type { Point, PrometheusClient } from './prometheus.js'
import { createPrometheusClient } from './prometheus.js'

const DEFAULT_RANGE = '15m'
const DEFAULT_STEP = '15s'
const MIN_RANGE_MS = 60_000
const MAX_RANGE_MS = 24 * 3_600_000
const MIN_STEP_MS = 1_000
const MAX_POINTS = 11_000

export type MetricsWindow = { range: string; step: string; rangeMs: number; stepMs: number }

/** The window a metrics query asks for, defaults filled in; a 400 when it is out of bounds. */
export function metricsWindow(query: { range?: string | undefined; step?: string | undefined }): MetricsWindow {
  const range = query.range ?? DEFAULT_RANGE
  const step = query.step ?? DEFAULT_STEP
  const rangeMs = durationOrNaN(range)
  const stepMs = durationOrNaN(step)
  if (!(rangeMs >= MIN_RANGE_MS && rangeMs <= MAX_RANGE_MS)) {
    throw new InvalidInputError(
      `query parameter range: expected a Go duration from ${formatDuration(MIN_RANGE_MS)} to ${formatDuration(MAX_RANGE_MS)}, e.g. 15m`,
    )
  }
  if (!(stepMs >= MIN_STEP_MS))
    throw new InvalidInputError('query parameter step: expected a Go duration of at least 1s, e.g. 15s')
  if (rangeMs / stepMs > MAX_POINTS)
    throw new InvalidInputError(
      `query parameter step: too small for the range, at most ${MAX_POINTS} points per series`,
    )
  return { range, step, rangeMs, stepMs }
}

function durationOrNaN(text: string): number {
  try {
    return parseDuration(text)
  } catch {
    return NaN
  }
}

type Series = { points: Point[]; unit: string }

/**
 * One query_range per series, all at once, over the window ending at the last whole step (so
 * the same request a moment later gives the same points). The first failure answers for all
 * and cancels the rest.
 */
export async function querySeries<K extends string>(
  prometheus: PrometheusClient,
  log: { warn(details: object, message: string): void },
  window: MetricsWindow,
  queries: Record<K, string>,
  units: Record<K, string>,
): Promise<Record<K, Series>> {
  const endMs = Math.floor(Date.now() / window.stepMs) * window.stepMs
  const range = {
    startSeconds: (endMs - window.rangeMs) / 1000,
    endSeconds: endMs / 1000,
    stepSeconds: window.stepMs / 1000,
  }
  const cancel = new AbortController()
  const keys = Object.keys(queries) as K[]
  try {
    const points = await Promise.all(
      keys.map((key) => prometheus.queryRange({ query: queries[key], ...range }, cancel.signal)),
    )
    return Object.fromEntries(keys.map((key, i) => [key, { points: points[i], unit: units[key] }])) as Record<K, Series>
  } catch (error) {
    // The caller sees a 503; the operator needs to know which dependency said what.
    if (error instanceof UnavailableError) log.warn({ reason: error.message }, 'metrics query failed')
    throw error
  } finally {
    cancel.abort()
  }
}

export function prometheusFor(config: MetricsSettings): PrometheusClient | null {
  if (config.prometheusUrl === '') return null
  return createPrometheusClient({ baseUrl: config.prometheusUrl, timeoutMs: config.prometheusTimeoutMs })
}

export function notConfigured(): UnavailableError {
  return new UnavailableError('metrics not configured: set PLATFORM_PROMETHEUS_URL')
}
