// The traces kept in memory (tracing/store.ts): recent ones, an application's, one trace's spans.
// A trace belongs to the application one of its spans named, and is read under that
// application's rules: the list holds only applications the caller may read, and a trace of
// any other answers 404 like one never kept, so its id says nothing about other tenants.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { NotFoundError } from '@session-relay/common/errors'
import { visibleTenants } from '../../domain/access.js'
import { applicationNotFound } from '../../domain/not-found.js'
import { applicationTenant, listApplications } from '../../store/applications.js'
import type { StoredTrace, TraceSummary as Summary } from '../../tracing/store.js'
import { callerOf } from '../auth.js'
import type { RouteDeps } from '../route-deps.js'
import { errors } from '../schemas/errors.js'
import { AppParams } from '../schemas/params.js'
import { Trace, TraceList, TraceParams } from '../schemas/traces.js'

const listSchema = {
  operationId: 'listTraces',
  tags: ['traces'],
  summary: "Recent traces of the applications the caller may read, newest first (this process's only)",
  response: { 200: TraceList },
}

const listOfAppSchema = {
  operationId: 'listApplicationTraces',
  tags: ['traces'],
  summary: "Recent traces of an application, newest first (this process's only)",
  params: AppParams,
  response: { 200: TraceList, ...errors(404) },
}

const getSchema = {
  operationId: 'getTrace',
  tags: ['traces'],
  summary: "One kept trace's spans, by start, with offsets from the trace's start",
  params: TraceParams,
  response: { 200: Trace, ...errors(400, 404) },
}

const iso = (ms: number): string => new Date(ms).toISOString()

const summary = (trace: Summary) => ({
  traceId: trace.traceId,
  appId: trace.appId,
  name: trace.name,
  start: iso(trace.startMs),
  durationMs: trace.durationMs,
  status: trace.status,
  spanCount: trace.spanCount,
})

function view(trace: StoredTrace) {
  const start = Math.min(...trace.spans.map((span) => span.startMs))
  const end = Math.max(...trace.spans.map((span) => span.startMs + span.durationMs))
  return {
    traceId: trace.traceId,
    appId: trace.appId,
    start: iso(start),
    durationMs: end - start,
    spans: trace.spans.map((span) => ({
      spanId: span.spanId,
      parentSpanId: span.parentSpanId,
      name: span.name,
      startOffsetMs: span.startMs - start,
      durationMs: span.durationMs,
      status: span.status,
      attributes: span.attributes,
    })),
    droppedSpans: trace.droppedSpans,
  }
}

export const traceRoutes: FastifyPluginAsyncTypebox<RouteDeps> = async (app, { db, traces }) => {
  const kept = traces?.capacity ?? 0
  const readable = async (caller: ReturnType<typeof callerOf>): Promise<Set<string>> =>
    new Set((await listApplications(db, visibleTenants(caller))).map((application) => application.id))

  app.get('/traces', { schema: listSchema }, async (request) => {
    if (traces == null) return { kept, traces: [] }
    return { kept, traces: traces.list(await readable(callerOf(request))).map(summary) }
  })

  // The application's tenant was checked before this handler (http/app.ts).
  app.get('/applications/:appId/traces', { schema: listOfAppSchema }, async (request) => {
    if ((await applicationTenant(db, request.params.appId)) === null) throw applicationNotFound()
    if (traces == null) return { kept, traces: [] }
    return { kept, traces: traces.list(new Set([request.params.appId])).map(summary) }
  })

  app.get('/traces/:traceId', { schema: getSchema }, async (request) => {
    const trace = traces?.get(request.params.traceId) ?? null
    if (trace !== null) {
      const tenant = await applicationTenant(db, trace.appId)
      const tenants = visibleTenants(callerOf(request))
      if (tenant !== null && (tenants === null || tenants.includes(tenant))) return view(trace)
    }
    throw new NotFoundError('trace not found: not kept, or not of an application you may read')
  })
}
