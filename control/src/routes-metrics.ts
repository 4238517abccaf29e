import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { formatDuration, parseDuration } from '../../common/src/duration.js'
import type { RouteDeps } from './app.js'
import { applicationExists } from './applications.js'
import { InvalidInputError } from './errors.js'
import { applicationNotFound, getFunction } from './functions.js'
import { functionNotFound } from './routes-functions.js'
import { ApplicationMetrics, AppParams, errors, FunctionMetrics, FunctionParams, MetricsQuery, OverviewMetrics } from './schemas.js'
import { metricsUnavailable } from './unavailable.js'

export const DEFAULT_RANGE = '15m'
export const DEFAULT_STEP = '15s'
const MIN_RANGE_MS = 60_000
const MAX_RANGE_MS = 24 * 3_600_000
const MIN_STEP_MS = 1_000
const MAX_POINTS = 11_000

export type MetricsWindow = { range: string; step: string; rangeMs: number; stepMs: number }

/** The window a metrics query asks for, defaults filled in; a 400 when it is out of bounds. */
export function metricsWindow (query: { range?: string | undefined; step?: string | undefined }): MetricsWindow {
  const range = query.range ?? DEFAULT_RANGE
  const step = query.step ?? DEFAULT_STEP
  const rangeMs = durationOrNaN(range)
  const stepMs = durationOrNaN(step)
  if (!(rangeMs >= MIN_RANGE_MS && rangeMs <= MAX_RANGE_MS)) {
    throw new InvalidInputError(`query parameter range: expected a Go duration from ${formatDuration(MIN_RANGE_MS)} to ${formatDuration(MAX_RANGE_MS)}, e.g. 15m`)
  }
  if (!(stepMs >= MIN_STEP_MS)) throw new InvalidInputError('query parameter step: expected a Go duration of at least 1s, e.g. 15s')
  if (rangeMs / stepMs > MAX_POINTS) throw new InvalidInputError(`query parameter step: too small for the range, at most ${MAX_POINTS} points per series`)
  return { range, step, rangeMs, stepMs }
}

function durationOrNaN (text: string): number {
  try {
    return parseDuration(text)
  } catch {
    return NaN
  }
}

export const metricsRoutes: FastifyPluginAsyncTypebox<RouteDeps> = async (app, { db, config }) => {
  app.get('/applications/:appId/metrics', {
    schema: {
      tags: ['metrics'],
      summary: 'CPU (cores) and memory (bytes) of the application',
      params: AppParams,
      querystring: MetricsQuery,
      response: { 200: ApplicationMetrics, ...errors(400, 404) },
    },
  }, async (request) => {
    metricsWindow(request.query)
    if (!await applicationExists(db, request.params.appId)) throw applicationNotFound()
    throw metricsUnavailable(config)
  })

  app.get('/applications/:appId/functions/:fnId/metrics', {
    schema: {
      tags: ['metrics'],
      summary: 'Request rate, p95 latency (ms) and error rate of the function',
      params: FunctionParams,
      querystring: MetricsQuery,
      response: { 200: FunctionMetrics, ...errors(400, 404) },
    },
  }, async (request) => {
    metricsWindow(request.query)
    if (await getFunction(db, request.params.appId, request.params.fnId) === null) throw functionNotFound()
    throw metricsUnavailable(config)
  })

  app.get('/overview/metrics', {
    schema: {
      tags: ['metrics'],
      summary: 'HTTP request rate and build rate of the whole platform',
      querystring: MetricsQuery,
      response: { 200: OverviewMetrics, ...errors(400) },
    },
  }, async (request) => {
    metricsWindow(request.query)
    throw metricsUnavailable(config)
  })
}
