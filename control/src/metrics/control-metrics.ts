// The control plane's own metrics, served on /metrics in Prometheus's text format: HTTP
// requests by route and status, finished builds by result, build durations, and the default
// process metrics. The overview endpoint's series are queries over these (queries.ts).
import { collectDefaultMetrics, Counter, Histogram, Registry } from 'prom-client'
import type { BuildT } from '../model/resources.js'

export type ControlMetrics = {
  /**
   * One answered HTTP request; `route` is the route's pattern (`/api/v1/applications/:appId`),
   * undefined when none matched; `tenant` the tenant of the application it was under, if any.
   */
  recordRequest(method: string, route: string | undefined, statusCode: number, tenant?: string | null): void
  /**
   * A build that reached `succeeded` or `failed`: counted once per build id, with its duration
   * from `createdAt` to `finishedAt`. Builds in any other status are ignored.
   */
  recordBuildFinished(build: BuildT, tenant?: string): void
  /** The exposition text, the process metrics included. */
  render(): Promise<string>
  readonly contentType: string
}

// Methods outside this set (Fastify answers them 404) share one label value, so a client
// cannot create series at will. Unmatched paths likewise share one route value.
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'])
const UNMATCHED_ROUTE = 'unmatched'

const BUILD_RESULTS = ['succeeded', 'failed'] as const

// Builds take from seconds (a cached rebuild) to the build timeout (tens of minutes).
const BUILD_DURATION_BUCKETS = [5, 10, 30, 60, 120, 300, 600, 1200, 1800, 3600]

// A watcher that re-lists after a reconnect sees finished builds again; this many recent ids
// are remembered so each is counted once.
const REMEMBERED_BUILDS = 10_000

// Process metrics describe the process, not one app: one registry for all of them, made on
// first use, so tests that start many control planes in one process do not stack observers.
let processRegistry: Registry | undefined

function processMetrics(): Registry {
  if (processRegistry === undefined) {
    processRegistry = new Registry()
    collectDefaultMetrics({ register: processRegistry })
  }
  return processRegistry
}

/** Where the same counts go as well: the embedded store, without Prometheus (embedded.ts). */
type AlsoRecord = {
  recordRequest(route: string | undefined, tenant?: string | null): void
  recordBuild(tenant?: string): void
}

export function createControlMetrics(also?: AlsoRecord): ControlMetrics {
  const registry = new Registry()
  const httpRequests = new Counter({
    name: 'platform_http_requests_total',
    help: 'HTTP requests answered, by method, route pattern and status code.',
    labelNames: ['method', 'route', 'status_code'] as const,
    registers: [registry],
  })
  const buildsFinished = new Counter({
    name: 'platform_builds_finished_total',
    help: 'Builds that reached succeeded or failed, by result.',
    labelNames: ['result'] as const,
    registers: [registry],
  })
  // Per tenant, for a tenant's overview (queries.ts); the series above stay the platform's.
  const tenantRequests = new Counter({
    name: 'platform_tenant_http_requests_total',
    help: "HTTP requests under an application, by the application's tenant.",
    labelNames: ['tenant'] as const,
    registers: [registry],
  })
  const tenantBuilds = new Counter({
    name: 'platform_tenant_builds_finished_total',
    help: "Builds that reached succeeded or failed, by the application's tenant.",
    labelNames: ['tenant'] as const,
    registers: [registry],
  })
  const buildDuration = new Histogram({
    name: 'platform_build_duration_seconds',
    help: "Time from a build's creation to its end, by result.",
    labelNames: ['result'] as const,
    buckets: BUILD_DURATION_BUCKETS,
    registers: [registry],
  })
  // Both results exist from the start at 0: rate() cannot see the first increase of a series
  // that appears with the value 1 already.
  for (const result of BUILD_RESULTS) {
    buildsFinished.inc({ result }, 0)
    buildDuration.zero({ result })
  }
  const recorded = new Set<string>()
  const process = processMetrics()

  return {
    recordRequest(method, route, statusCode, tenant) {
      httpRequests.inc({
        method: METHODS.has(method) ? method : 'other',
        route: route ?? UNMATCHED_ROUTE,
        status_code: String(statusCode),
      })
      if (tenant !== undefined && tenant !== null) tenantRequests.inc({ tenant })
      also?.recordRequest(route, tenant)
    },
    recordBuildFinished(build, tenant) {
      if (build.status !== 'succeeded' && build.status !== 'failed') return
      if (recorded.has(build.id)) return
      recorded.add(build.id)
      if (recorded.size > REMEMBERED_BUILDS) recorded.delete(recorded.values().next().value as string)
      const finished = build.finishedAt === null ? Date.now() : Date.parse(build.finishedAt)
      const seconds = Math.max(0, (finished - Date.parse(build.createdAt)) / 1000)
      buildsFinished.inc({ result: build.status })
      if (tenant !== undefined) tenantBuilds.inc({ tenant })
      buildDuration.observe({ result: build.status }, seconds)
      also?.recordBuild(tenant)
    },
    async render() {
      return (await registry.metrics()) + (await process.metrics())
    },
    contentType: registry.contentType,
  }
}
