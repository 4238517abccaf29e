// The traces kept in memory on one machine (control/src/tracing/store.ts) through the API: the
// SDK started as main.ts starts it with no collector (no OTLP export, the store's processor, the
// HTTP, Fastify and pg instrumentations), then a control plane on PGlite with the local runtime,
// the stand-in builder (test/fixtures/local-programs.ts) and the real worker: a build's steps
// in order under its span, an invoke's spans under the API request, each with offsets and
// durations; then the tenants' rules on three routes.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { startTracing } from '@session-relay/control/tracing/sdk'
import { createTraceStore, DEFAULT_TRACE_LIMITS } from '@session-relay/control/tracing/store'

t.setTimeout(240_000)

// Before anything imports Fastify or pg, as main.ts does: the instrumentations patch them as they load.
const store = createTraceStore({ traces: 50, ...DEFAULT_TRACE_LIMITS })
const sdk = startTracing({ exportOtlp: false, processors: [store.processor] })
t.teardown(() => sdk.shutdown())
const { createApp, firstFunction, startTestControl, until, untilDeployed } = await import('../helpers/control.js')
const { toolchainCheck } = await import('@session-relay/control/local/programs')
const { writeStandIns } = await import('../fixtures/local-programs.js')
const { SHARED_COMPILED } = await import('../helpers/worker-probe.js')
const { startOidcProvider } = await import('../fixtures/oidc-provider.js')
const { wasmkube } = await import('../helpers/wasmkube.js')

type Span = {
  spanId: string
  parentSpanId: string | null
  name: string
  startOffsetMs: number
  durationMs: number
  status: string
  attributes: Record<string, string | number | boolean>
}
type Trace = { traceId: string; appId: string; start: string; durationMs: number; spans: Span[]; droppedSpans: number }
type Summary = { traceId: string; appId: string; name: string; start: string; durationMs: number; status: string }
type List = { kept: number; traces: Summary[] }
type Control = Awaited<ReturnType<typeof startTestControl>>

/** The kept trace of the application that has a span `name`, once `ready` says it is complete. */
async function traceWith(control: Control, appId: string, ready: (trace: Trace) => boolean): Promise<Trace> {
  let found: Trace | undefined
  await until(
    async () => {
      const list = (await control.call('GET', `/applications/${appId}/traces`)).body as List
      for (const summary of list.traces) {
        const trace = (await control.call('GET', `/traces/${summary.traceId}`)).body as Trace
        if (ready(trace)) found = trace
      }
      return found !== undefined
    },
    60_000,
    'the trace kept',
  )
  return found as Trace
}

const childrenOf = (trace: Trace, parent: Span | undefined): Span[] =>
  trace.spans.filter((span) => span.parentSpanId === parent?.spanId)

/** The span's ancestors, nearest first, up to the trace's root here. */
function ancestors(trace: Trace, span: Span): Span[] {
  const chain: Span[] = []
  for (let at = span.parentSpanId; at !== null;) {
    const parent = trace.spans.find((each) => each.spanId === at)
    if (parent === undefined) break
    chain.push(parent)
    at = parent.parentSpanId
  }
  return chain
}

t.test("a build's steps in order, an invoke's spans: offsets and durations", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'traces-embedded-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const control = await startTestControl(
    t,
    'pglite',
    ['--dev-insecure-skip-auth', '--runtime', 'local', '--local-cache-dir', SHARED_COMPILED],
    {
      deps: {
        local: { ...writeStandIns(dir), toolchains: toolchainCheck('', undefined, process.env.PATH) },
        traces: store,
      },
    },
  )
  // The stand-in builder's component is `f`: so is the function, by the application's name.
  const app = await createApp(control, 'f', { language: 'js' })
  const fn = firstFunction(app)
  t.equal(
    (
      await control.call('PUT', `/applications/${app.id}/functions/${fn.id}/source`, {
        json: { files: { 'index.js': 'export default 1\n' } },
      })
    ).status,
    200,
  )
  const build = (await control.call('POST', `/applications/${app.id}/builds`)).body as { id: string }

  const built = await traceWith(control, app.id, (trace) =>
    trace.spans.some((span) => span.name === 'build' && span.attributes['platform.build.status'] === 'succeeded'),
  )
  const buildSpan = built.spans.find((span) => span.name === 'build')
  t.equal(buildSpan?.attributes['platform.build.id'], build.id)
  t.equal(buildSpan?.status, 'unset')
  const steps = childrenOf(built, buildSpan)
  t.same(
    steps.map((span) => span.name),
    ['build queue wait', 'build bundle', 'build componentize', 'build push'],
    'the steps by start',
  )
  const end = (span: Span | undefined): number => (span?.startOffsetMs ?? NaN) + (span?.durationMs ?? NaN)
  for (const [index, step] of steps.entries()) {
    t.ok(step.durationMs >= 0 && step.startOffsetMs >= (buildSpan?.startOffsetMs ?? Infinity), `${step.name} timed`)
    // Each step starts where the one before it ended (one clock: tracing/build-trace.ts).
    if (index > 0) t.ok(step.startOffsetMs >= end(steps[index - 1]) - 0.001, `${step.name} after the step before`)
    t.ok(end(step) <= end(buildSpan) + 0.001, `${step.name} inside the build`)
  }
  // The build is a child of the request that started it, the trace's root here.
  const [root, ...others] = built.spans.filter((span) => span.parentSpanId === null)
  t.same(others, [], 'one root')
  t.match(root?.name, /^POST\b/, 'the API request')
  t.ok(ancestors(built, buildSpan as Span).includes(root as Span), 'the build under the request')
  t.equal(root?.startOffsetMs, 0)
  t.ok(built.durationMs >= end(buildSpan) - 0.001, 'the trace lasts until its last span ends')
  t.notOk(
    built.spans.some((span) => span.name.includes('readyz') || span.name.includes('healthz')),
    'nothing but the request',
  )

  await untilDeployed(control, app.id)
  const reply = await control.call('POST', `/applications/${app.id}/functions/${fn.id}/invoke`, {
    json: { method: 'GET', path: '/' },
  })
  t.equal(reply.status, 200, reply.text)
  const invoked = await traceWith(control, app.id, (trace) => trace.spans.some((span) => span.name === 'invoke'))
  const invoke = invoked.spans.find((span) => span.name === 'invoke') as Span
  t.match(invoke.attributes, {
    'platform.application.id': app.id,
    'platform.function.id': fn.id,
    'http.response.status_code': 200,
  })
  const invokeRoot = invoked.spans.find((span) => span.parentSpanId === null)
  t.match(invokeRoot?.name, /^POST\b/)
  t.ok(ancestors(invoked, invoke).includes(invokeRoot as Span), 'the invoke under the API request')
  t.ok(invoked.spans.length >= 3, `the request's own spans too: ${invoked.spans.map((span) => span.name).join(', ')}`)
  for (const span of invoked.spans) {
    const parent = invoked.spans.find((each) => each.spanId === span.parentSpanId)
    if (parent !== undefined) t.ok(span.startOffsetMs >= parent.startOffsetMs, `${span.name} starts within its parent`)
  }

  const list = (await control.call('GET', '/traces')).body as List
  t.equal(list.kept, 50)
  const [newest, before] = list.traces
  t.match(newest, { traceId: invoked.traceId, appId: app.id, name: invokeRoot?.name, status: 'ok' })
  t.match(before, { traceId: built.traceId, appId: app.id, status: 'ok' })
  t.ok(Date.parse(newest?.start ?? '') >= Date.parse(before?.start ?? ''), 'newest first')
  t.equal(newest?.durationMs, invoked.durationMs)

  // The same through `wasmkube traces`: the list, then one trace as indented lines.
  const cli = wasmkube(t, { WASMKUBE_SERVER: control.url })
  const listed = await cli(['traces', 'f'])
  t.equal(listed.code, 0, listed.stderr)
  const [header, ...lines] = listed.out.trimEnd().split('\n')
  t.match(header, /^TRACE +STARTED +DURATION +STATUS +REQUEST$/)
  t.same(
    lines.map((line) => line.split(/ +/)[0]),
    [invoked.traceId, built.traceId],
  )
  const shown = await cli(['traces', 'f', invoked.traceId])
  t.equal(shown.code, 0, shown.stderr)
  const [spanHeader = '', ...spanLines] = shown.out.trimEnd().split('\n')
  t.equal(spanLines.length, invoked.spans.length, 'a line per span')
  // How far a span's name is from the SPAN column: two spaces a level.
  const indentOf = (name: string): number => {
    const line = spanLines.find((each) => each.endsWith(` ${name}`)) ?? ''
    return line.lastIndexOf(name) - spanHeader.indexOf('SPAN')
  }
  t.equal(indentOf(invokeRoot?.name ?? ''), 0, 'the request at the left')
  t.ok(indentOf('invoke') >= 4, 'the invoke indented under it')
  t.match(await cli(['traces', 'f', 'nope']), { code: 2, stderr: /TRACE: 32 lower-case hex digits/ })

  const badId = await control.call('GET', '/traces/not-a-trace-id')
  t.equal(badId.status, 400, badId.text)
  const unknown = await control.call('GET', `/traces/${'0'.repeat(32)}`)
  t.equal(unknown.status, 404, unknown.text)
  t.equal((await control.call('GET', `/applications/${'5'.repeat(8)}-5555-4555-8555-555555555555/traces`)).status, 404)
})

t.test("a tenant sees its applications' traces only", async (t) => {
  const oidc = await startOidcProvider()
  t.teardown(() => oidc.close())
  // No runtime: an invoke answers 503, its span (an error) still names the application.
  const control = await startTestControl(
    t,
    'pglite',
    [
      ...['--oidc-issuer', oidc.issuer, '--oidc-audience', oidc.clientId, '--tenant-claim', 'groups'],
      ...['--admin-claim', 'roles=platform-admin', '--readonly-claim', 'roles=viewer', '--runtime', 'cluster'],
    ],
    { deps: { traces: store } },
  )
  const red = await oidc.idToken({ claims: { groups: ['red'] } })
  const blue = await oidc.idToken({ claims: { groups: ['blue'] } })
  const viewer = await oidc.idToken({ claims: { groups: ['red'], roles: 'viewer' } })
  const admin = await oidc.idToken({ claims: { roles: ['platform-admin'] } })
  const as = (token: string, method: string, path: string, json?: unknown) =>
    control.call(method, path, { token, ...(json === undefined ? {} : { json }) })

  const apps: Record<string, { id: string; traceId: string }> = {}
  for (const [name, token] of [
    ['r', red],
    ['b', blue],
  ] as const) {
    const app = await createApp(control, name, {}, { token })
    const fn = firstFunction(app)
    t.equal(
      (await as(token, 'POST', `/applications/${app.id}/functions/${fn.id}/invoke`, { method: 'GET', path: '/' }))
        .status,
      503,
    )
    const list = (await as(token, 'GET', `/applications/${app.id}/traces`)).body as List
    const [only, ...more] = list.traces
    t.same(more, [])
    t.match(only, { appId: app.id, status: 'error' })
    apps[name] = { id: app.id, traceId: only?.traceId ?? '' }
  }
  const { r, b } = apps as Record<'r' | 'b', { id: string; traceId: string }>
  const listed = async (token: string): Promise<string[]> =>
    ((await as(token, 'GET', '/traces')).body as List).traces
      .map((summary) => summary.appId)
      .filter((appId) => appId === r.id || appId === b.id)
  t.same(await listed(red), [r.id], 'red lists its own')
  t.same(await listed(blue), [b.id], 'blue lists its own')
  t.same(await listed(viewer), [r.id], 'a read-only member reads')
  t.same(await listed(admin), [b.id, r.id], 'an admin lists every tenant, newest first')
  t.equal((await as(red, 'GET', `/traces/${r.traceId}`)).status, 200)
  const other = await as(red, 'GET', `/traces/${b.traceId}`)
  t.equal(other.status, 404, 'another tenant: as if never kept')
  t.same(other.body, (await as(red, 'GET', `/traces/${'1'.repeat(32)}`)).body, 'the same answer as an unknown id')
  t.equal((await as(red, 'GET', `/applications/${b.id}/traces`)).status, 403, "another tenant's application")
  t.equal((await as(admin, 'GET', `/traces/${b.traceId}`)).status, 200)
  // A deleted application's traces are no one's.
  t.equal((await as(blue, 'DELETE', `/applications/${b.id}`)).status, 204)
  t.equal((await as(admin, 'GET', `/traces/${b.traceId}`)).status, 404)
})
