// The worker's span in one trace (issue 42): the compiled control plane as an operator runs it
// with OTEL_EXPORTER_OTLP_ENDPOINT naming a real OpenTelemetry Collector, which its local runtime
// hands on to the real worker. An API caller's trace runs through the control plane's invoke span
// and the worker's span (session-relay-worker) to the function's outgoing request, and the
// worker's span says how the request ended: ok, then memory when the function grows past its
// application's limit (the worker's span a child of the invoke span's HTTP client span). The builder is the stand-in (test/fixtures/local-programs.ts), passed to
// the compiled control plane by a small entry point written here, which starts the SDK as main.ts
// does; what it builds is the worker's probe function.
import { randomBytes } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { call, firstFunction, until } from '../helpers/control.js'
import type { App } from '../helpers/control.js'
import { scratchDir } from '../helpers/control-process.js'
import { attribute, startCollector, traceparentService } from '../helpers/otel-collector.js'
import { processRunner } from '../helpers/process.js'
import { SHARED_COMPILED } from '../helpers/worker-probe.js'
import { writeStandIns } from '../fixtures/local-programs.js'

t.setTimeout(300_000)

const dist = (path: string): string => fileURLToPath(new URL(`../../control/dist/${path}`, import.meta.url))

// main.ts's order (the SDK before the application is imported), with the stand-in builder.
const ENTRY = `
import { startTracing } from ${JSON.stringify(dist('tracing/sdk.js'))}
startTracing({ exportOtlp: true })
const { parseConfig } = await import(${JSON.stringify(dist('config.js'))})
const { createLogger } = await import(${JSON.stringify(dist('logger.js'))})
const { toolchainCheck } = await import(${JSON.stringify(dist('local/programs.js'))})
const { startControlPlane } = await import(${JSON.stringify(dist('server.js'))})
const config = parseConfig(process.argv.slice(2), process.env)
await startControlPlane(config, {
  logger: createLogger('info'),
  local: { builderMain: process.env.TEST_BUILDER_MAIN, toolchains: toolchainCheck('', undefined, process.env.PATH) },
})
`

t.test('one trace from the API request through the worker span to the function outgoing request', async (t) => {
  const collector = await startCollector(t)
  const { origin, received } = await traceparentService(t)

  const dir = scratchDir(t)
  const entry = join(dir, 'control.mjs')
  writeFileSync(entry, ENTRY)
  const runner = processRunner({ mainJs: entry, ownEnv: /^PLATFORM_/, listening: 'control plane listening' })
  const control = await runner.start(
    t,
    [
      ...['--dev-insecure-skip-auth', '--addr', '127.0.0.1:0', '--runtime', 'local', '--data-dir', join(dir, 'data')],
      ...['--local-cache-dir', SHARED_COMPILED, '--local-allow-private-outbound', '127.0.0.0/8'],
    ],
    {
      TEST_BUILDER_MAIN: writeStandIns(dir).builderMain,
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint,
      OTEL_BSP_SCHEDULE_DELAY: '50',
    },
  )
  const api = (method: string, path: string, json?: unknown, headers?: Record<string, string>) =>
    call(`http://127.0.0.1:${control.port}`, method, path, {
      ...(json === undefined ? {} : { json }),
      ...(headers === undefined ? {} : { headers }),
    })

  // The stand-in builder's component is `f`: so is the function, by the application's name. Its
  // instances may grow to 64 MiB.
  const created = await api('POST', '/applications', { name: 'f', language: 'js', runtime: 'wasmkube' })
  t.equal(created.status, 201, created.text)
  const app = created.body as App
  const limited = await api('PATCH', `/applications/${app.id}`, { resources: { memoryLimit: '64Mi' } })
  t.equal(limited.status, 200, limited.text)
  const fn = firstFunction(app)
  const put = await api('PUT', `/applications/${app.id}/functions/${fn.id}/source`, {
    files: { 'index.js': `export default 1 // OUTBOUND:${origin}\n` },
  })
  t.equal(put.status, 200, put.text)
  const build = (await api('POST', `/applications/${app.id}/builds`)).body as { id: string }
  await until(
    async () =>
      ((await api('GET', `/applications/${app.id}`)).body as { deployment: { ready: boolean } | null }).deployment
        ?.ready === true,
    120_000,
    `build ${build.id} deployed`,
  )

  // The caller's trace; a marker in the function's query and in a header, which no span may carry.
  const traceId = randomBytes(16).toString('hex')
  const caller = randomBytes(8).toString('hex')
  const marker = `m4rker${randomBytes(6).toString('hex')}`
  const invoke = (path: string) =>
    api(
      'POST',
      `/applications/${app.id}/functions/${fn.id}/invoke`,
      { method: 'GET', path, headers: { 'x-marker': [marker] } },
      { traceparent: `00-${traceId}-${caller}-01` },
    )
  const reply = await invoke(`/fetch?url=${origin}/&q=${marker}`)
  t.equal(reply.status, 200, reply.text)
  t.match((reply.body as { body: string }).body, /^fetched 200 pong/, 'the function reached the service')

  const isWorker = (span: { service: string; traceId: string }) =>
    span.service === 'session-relay-worker' && span.traceId === traceId
  let spans = await collector.waitFor(
    (spans) => spans.some(isWorker) && spans.some((span) => span.name === 'invoke' && span.traceId === traceId),
    30_000,
    "the worker's span and the invoke span",
  )
  const invokeSpan = spans.find((span) => span.name === 'invoke' && span.traceId === traceId)
  const worker = spans.find(isWorker)
  t.equal(invokeSpan?.service, 'session-relay-control')
  t.ok(
    spans.some((span) => span.traceId === traceId && span.parentSpanId === caller && span.kind === 2),
    "the API request's server span continues the caller's trace",
  )
  // The invoke span's HTTP client span (instrumentation-http's, around the request to the
  // worker) is what the request carries: the worker's span is its child.
  const client = spans.find((span) => span.spanId === worker?.parentSpanId)
  t.equal(client?.service, 'session-relay-control')
  t.equal(client?.kind, 3, "the worker span's parent is the control plane's client span")
  t.equal(client?.parentSpanId, invokeSpan?.spanId, "... which is the invoke span's child")
  t.equal(worker?.kind, 2, 'a server span')
  t.equal(worker?.name, 'GET /...', 'named by method and route')
  t.equal(attribute(worker?.attributes, 'platform.application.id'), app.id)
  t.equal(attribute(worker?.attributes, 'platform.component.id'), 'f')
  t.equal(attribute(worker?.attributes, 'http.route'), '/...')
  t.equal(attribute(worker?.attributes, 'platform.outcome'), 'ok')
  t.equal(attribute(worker?.attributes, 'http.response.status_code'), '200')
  t.equal(attribute(worker?.attributes, 'platform.instance.started'), true)
  t.ok(Number(attribute(worker?.attributes, 'platform.instance.start_ms')) >= 0, 'its instance start time')
  t.ok(Number(attribute(worker?.attributes, 'platform.guest.ms')) > 0, "the guest's time")
  t.same(received, [`00-${traceId}-${worker?.spanId}-01`], "the function's outgoing request is the worker span's child")

  // Past its 64 MiB: the guest traps on a refused growth, and the worker says why.
  const grown = await invoke('/alloc?mb=128')
  t.equal(grown.status, 200, grown.text)
  t.equal((grown.body as { status: number }).status, 500, 'the function failed')
  spans = await collector.waitFor(
    (spans) => spans.some((span) => isWorker(span) && attribute(span.attributes, 'platform.outcome') === 'memory'),
    30_000,
    "the worker's span of the request that grew too much",
  )
  const refused = spans.find((span) => isWorker(span) && attribute(span.attributes, 'platform.outcome') === 'memory')
  t.equal(attribute(refused?.attributes, 'http.response.status_code'), '500')
  t.equal(refused?.status?.code, 2, 'an error')
  t.equal(refused?.status?.message, 'memory')
  t.notMatch(collector.exported(), marker, 'no query string or header value exported')
})
