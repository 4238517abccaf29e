// The control plane's traces (issue 42), as an operator turns them on: the compiled process with
// OTEL_EXPORTER_OTLP_ENDPOINT naming a real OpenTelemetry Collector. A caller's traceparent is
// continued by the API request's spans; no query string, token or command-line secret is in
// anything exported; without an endpoint the SDK is never loaded.
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import t from 'tap'
import { tracingConfigured } from '@session-relay/control/tracing/configured'
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
