// The control plane's traces (issue 42), as an operator turns them on: the compiled process with
// OTEL_EXPORTER_OTLP_ENDPOINT naming a real OpenTelemetry Collector. A caller's traceparent is
// continued by the API request's spans; no query string, token or command-line secret is in
// anything exported. Without an endpoint the last traces are still kept in memory for the API
// (--traces-kept), and with none kept either the SDK is never loaded.
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import t from 'tap'
import { tracingConfigured } from '@session-relay/common/tracing/configured'
import { tracingPlan } from '@session-relay/control/tracing/configured'
import { controlProcess, scratchDir } from '../helpers/control-process.js'
import { attribute, startCollector } from '../helpers/otel-collector.js'

t.setTimeout(240_000)

const FLAGS = ['--dev-insecure-skip-auth', '--addr', '127.0.0.1:0', '--runtime', 'local']

t.test('an API request continues the caller trace; no query string or secret is exported', async (t) => {
  const collector = await startCollector(t)
  const dir = scratchDir(t)
  const secret = `s3cret-${randomBytes(12).toString('hex')}`
  // The secret is also on the command line (a process detector would export it).
  const control = await controlProcess.start(t, [...FLAGS, '--data-dir', join(dir, secret)], {
    OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint,
    OTEL_BSP_SCHEDULE_DELAY: '50',
    // A value the process sees in its environment that no span may carry.
    PLATFORM_TEST_UNUSED: secret,
  })
  const traceId = randomBytes(16).toString('hex')
  const parent = randomBytes(8).toString('hex')
  const response = await fetch(`http://127.0.0.1:${control.port}/api/v1/applications?access_token=${secret}`, {
    headers: { traceparent: `00-${traceId}-${parent}-01`, authorization: `Bearer ${secret}` },
  })
  t.equal(response.status, 200, await response.text())

  const spans = await collector.waitFor(
    (spans) => spans.some((span) => span.traceId === traceId && span.parentSpanId === parent),
    30_000,
    'the API request span under the caller span',
  )
  const ours = spans.filter((span) => span.traceId === traceId)
  const server = ours.find((span) => span.parentSpanId === parent)
  t.equal(server?.service, 'session-relay-control')
  t.equal(server?.kind, 2, 'a server span')
  t.ok(
    ours.some((span) => attribute(span.attributes, 'http.route') === '/api/v1/applications'),
    `Fastify's span names the route: ${ours.map((span) => span.name).join(', ')}`,
  )
  t.notMatch(collector.exported(), secret, 'no query string, header or environment value exported')
  t.notMatch(collector.exported(), 'access_token', 'the query string is cut off')
})

t.test('configured only by an OTLP endpoint, and off when OTEL_SDK_DISABLED says so', async (t) => {
  t.equal(tracingConfigured({}), false)
  t.equal(tracingConfigured({ OTEL_SERVICE_NAME: 'x' }), false, 'a name alone exports nowhere')
  t.equal(tracingConfigured({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' }), true)
  t.equal(tracingConfigured({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://127.0.0.1:4318/v1/traces' }), true)
  t.equal(tracingConfigured({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://x', OTEL_SDK_DISABLED: 'true' }), false)
  t.equal(tracingConfigured({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://x', OTEL_TRACES_EXPORTER: 'none' }), false)
})

t.test('no collector: the last traces kept for the API; --traces-kept 0 keeps none', async (t) => {
  const dir = scratchDir(t)
  const control = await controlProcess.start(t, [...FLAGS, '--data-dir', join(dir, 'kept')], {})
  const api = (method: string, path: string, json?: unknown): Promise<Response> =>
    fetch(`http://127.0.0.1:${control.port}/api/v1${path}`, {
      method,
      ...(json === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(json) }),
    })
  const created = (await (
    await api('POST', '/applications', { name: 'a', language: 'js', runtime: 'wasmkube' })
  ).json()) as {
    id: string
    functions: Array<{ id: string }>
  }
  // Not deployed: 404, and the invoke's span, an error, names the application.
  const invoke = await api('POST', `/applications/${created.id}/functions/${created.functions[0]?.id}/invoke`, {
    method: 'GET',
    path: '/',
  })
  t.equal(invoke.status, 404, await invoke.text())
  const list = (await (await api('GET', '/traces')).json()) as { kept: number; traces: Array<{ traceId: string }> }
  t.equal(list.kept, 100, 'the default')
  t.equal(list.traces.length, 1)
  const trace = (await (await api('GET', `/traces/${list.traces[0]?.traceId}`)).json()) as {
    spans: Array<{ name: string; status: string; parentSpanId: string | null }>
  }
  t.match(
    trace.spans.find((span) => span.name === 'invoke'),
    { status: 'error' },
  )
  t.match(
    trace.spans.find((span) => span.parentSpanId === null),
    { name: /^POST\b/ },
    "the HTTP instrumentation's request span: the SDK was started",
  )

  const off = await controlProcess.start(t, [...FLAGS, '--data-dir', join(dir, 'off'), '--traces-kept', '0'], {})
  const none = await fetch(`http://127.0.0.1:${off.port}/api/v1/traces`)
  t.same(await none.json(), { kept: 0, traces: [] })
})

t.test('the SDK loads to export, to keep traces, or both', async (t) => {
  const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' }
  t.same(tracingPlan({}, 100), { loadSdk: true, exportOtlp: false, keepTraces: true })
  t.same(tracingPlan({}, 0), { loadSdk: false, exportOtlp: false, keepTraces: false }, 'neither: never loaded')
  t.same(tracingPlan(endpoint, 0), { loadSdk: true, exportOtlp: true, keepTraces: false })
  t.same(tracingPlan(endpoint, 5), { loadSdk: true, exportOtlp: true, keepTraces: true })
  t.same(tracingPlan({ ...endpoint, OTEL_TRACES_EXPORTER: 'none' }, 5), {
    loadSdk: true,
    exportOtlp: false,
    keepTraces: true,
  })
  t.same(tracingPlan({ ...endpoint, OTEL_SDK_DISABLED: 'true' }, 5), {
    loadSdk: false,
    exportOtlp: false,
    keepTraces: false,
  })
})
