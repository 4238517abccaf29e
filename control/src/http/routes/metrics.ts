// The metrics endpoints: which series each one asks Prometheus for (metrics/queries.ts) over
// the window the caller chose (metrics/series.ts); without Prometheus, the same series from the
// control plane's own store (metrics/embedded.ts), over the same window and rate window.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { applicationNotFound, functionNotFound } from '../../domain/not-found.js'
import { applicationQueries, functionQueries, overviewQueries, rateWindowMs } from '../../metrics/queries.js'
import type { EmbeddedWindow } from '../../metrics/embedded.js'
import type { MetricsWindow } from '../../metrics/series.js'
import { metricsWindow, notConfigured, prometheusFor, querySeries } from '../../metrics/series.js'
import { clusterName } from '../../store/applications.js'
import { getFunction } from '../../store/functions.js'
import { visibleTenants } from '../../domain/access.js'
import { callerOf } from '../auth.js'
import type { RouteDeps } from '../route-deps.js'
import { errors } from '../schemas/errors.js'
import { ApplicationMetrics, FunctionMetrics, MetricsQuery, OverviewMetrics } from '../schemas/metrics.js'
import { AppParams, FunctionParams } from '../schemas/params.js'

export const metricsRoutes: FastifyPluginAsyncTypebox<RouteDeps> = async (app, { db, config, embeddedMetrics }) => {
  const prometheus = prometheusFor(config)
  const windowMsFor = (window: MetricsWindow): number => rateWindowMs(window.stepMs, config.metricsRateWindowMs)
  const embeddedWindow = (window: MetricsWindow): EmbeddedWindow => ({ ...window, rateWindowMs: windowMsFor(window) })
  // The applications' series only where this machine runs them: a cluster's are Prometheus's.
  const workloads = embeddedMetrics?.workloads === true ? embeddedMetrics.store : null
  const platform = embeddedMetrics?.store ?? null

  app.get(
    '/applications/:appId/metrics',
    {
      schema: {
        tags: ['metrics'],
        operationId: 'getApplicationMetrics',
        summary: 'CPU (cores) and memory (bytes) of the application',
        params: AppParams,
        querystring: MetricsQuery,
        response: { 200: ApplicationMetrics, ...errors(400, 404) },
      },
    },
    async (request) => {
      const window = metricsWindow(request.query)
      const appName = await clusterName(db, request.params.appId)
      if (appName === null) throw applicationNotFound()
      if (prometheus === null && workloads !== null) {
        const series = workloads.application(request.params.appId, embeddedWindow(window))
        return { range: window.range, step: window.step, series }
      }
      if (prometheus === null) throw notConfigured()
      const queries = applicationQueries({ namespace: config.namespace, appName }, windowMsFor(window))
      const series = await querySeries(prometheus, request.log, window, queries, { cpu: 'cores', memory: 'bytes' })
      return { range: window.range, step: window.step, series }
    },
  )

  app.get(
    '/applications/:appId/functions/:fnId/metrics',
    {
      schema: {
        tags: ['metrics'],
        operationId: 'getFunctionMetrics',
        summary: 'Request rate, p95 latency (ms) and error rate of the function',
        params: FunctionParams,
        querystring: MetricsQuery,
        response: { 200: FunctionMetrics, ...errors(400, 404) },
      },
    },
    async (request) => {
      const window = metricsWindow(request.query)
      const appName = await clusterName(db, request.params.appId)
      const fn = appName === null ? null : await getFunction(db, request.params.appId, request.params.fnId)
      if (appName === null || fn === null) throw functionNotFound()
      if (prometheus === null && workloads !== null) {
        // The worker counts by component, and a function is the component of its name (spin/manifest.ts).
        const series = workloads.function(request.params.appId, fn.name, embeddedWindow(window))
        return { range: window.range, step: window.step, series }
      }
      if (prometheus === null) throw notConfigured()
      const queries = functionQueries({ namespace: config.namespace, appName }, fn.route, windowMsFor(window))
      const series = await querySeries(prometheus, request.log, window, queries, {
        requestRate: 'req/s',
        latencyP95: 'ms',
        errorRate: 'req/s',
      })
      return { range: window.range, step: window.step, series }
    },
  )

  app.get(
    '/overview/metrics',
    {
      schema: {
        tags: ['metrics'],
        operationId: 'getOverviewMetrics',
        summary:
          "HTTP request rate and build rate of the whole platform; with tenants, of the caller's tenants' applications (an admin's: the whole platform)",
        querystring: MetricsQuery,
        response: { 200: OverviewMetrics, ...errors(400) },
      },
    },
    async (request) => {
      const window = metricsWindow(request.query)
      // Without a tenant claim there is one tenant, and the platform's series are its own.
      const tenants = config.tenantClaim === '' ? null : visibleTenants(callerOf(request))
      if (prometheus === null && platform !== null) {
        const series = platform.overview(embeddedWindow(window), tenants)
        return { range: window.range, step: window.step, series }
      }
      if (prometheus === null) throw notConfigured()
      const series = await querySeries(prometheus, request.log, window, overviewQueries(windowMsFor(window), tenants), {
        httpRequestRate: 'req/s',
        buildRate: 'builds/s',
      })
      return { range: window.range, step: window.step, series }
    },
  )
}
