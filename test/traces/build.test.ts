// A build's trace on this machine (control/src/tracing/build-trace.ts): one span with the build
// id and a child per step, in order, the queue wait first and the push last; then an invoke's
// span around the call to the worker (domain/running.ts), whose context the worker carries on
// to the function's outgoing request to a loopback service of the test; exported through
// the SDK's OTLP/HTTP exporter to a real OpenTelemetry Collector. The stand-in builder
// (test/fixtures/local-programs.ts) writes the real builder's step lines.
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http'
import { node, tracing } from '@opentelemetry/sdk-node'
import { toolchainCheck } from '@session-relay/control/local/programs'
import { createApp, firstFunction, startTestControl, until, untilDeployed } from '../helpers/control.js'
import { attribute, startCollector, traceparentService } from '../helpers/otel-collector.js'
import { writeStandIns } from '../fixtures/local-programs.js'
import { SHARED_COMPILED } from '../helpers/worker-probe.js'

t.setTimeout(240_000)

t.test('a build: its steps in order; an invoke: one trace to the function outgoing request', async (t) => {
  const collector = await startCollector(t)
  const provider = new node.NodeTracerProvider({
    spanProcessors: [
      new tracing.SimpleSpanProcessor(new OTLPTraceExporter({ url: `${collector.endpoint}/v1/traces` })),
    ],
  })
  provider.register()
  t.teardown(() => provider.shutdown())
  const { origin, received } = await traceparentService(t)
  const dir = mkdtempSync(join(tmpdir(), 'traces-build-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const control = await startTestControl(
    t,
    'pglite',
    [
      ...['--dev-insecure-skip-auth', '--runtime', 'local', '--local-cache-dir', SHARED_COMPILED],
      ...['--local-allow-private-outbound', '127.0.0.0/8'],
    ],
    { deps: { local: { ...writeStandIns(dir), toolchains: toolchainCheck('', undefined, process.env.PATH) } } },
  )
  // The stand-in builder's component is `f`: so is the function, by the application's name.
  const app = await createApp(control, 'f', { language: 'js' })
  const fn = firstFunction(app)
  // Values no exported span may hold: a variable's, a secret's, and a token the caller sends.
  const unique = (kind: string): string => `${kind}-${randomBytes(9).toString('hex')}`
  const [plain, secret, token] = [unique('plain'), unique('secret'), unique('token')]
  const patched = await control.call('PATCH', `/applications/${app.id}`, {
    json: { variables: { greeting: { value: plain }, api_token: { secret } } },
  })
  t.equal(patched.status, 200, 'the variables set')
  const put = await control.call('PUT', `/applications/${app.id}/functions/${fn.id}/source`, {
    json: { files: { 'index.js': `export default 1 // OUTBOUND:${origin}\n` } },
  })
  t.equal(put.status, 200)
  const build = (await control.call('POST', `/applications/${app.id}/builds`)).body as { id: string }
  await until(
    async () =>
      ((await control.call('GET', `/applications/${app.id}/builds/${build.id}`)).body as { status: string }).status ===
      'succeeded',
    120_000,
    `build ${build.id} to succeed`,
  )
  const ofBuild = (spans: ReturnType<typeof collector.spans>) =>
    spans.filter((span) => attribute(span.attributes, 'platform.build.id') === build.id)
  const spans = ofBuild(
    await collector.waitFor(
      (spans) => ofBuild(spans).length >= 5,
      30_000,
      'the build span and its four steps (each span is its own export: any order)',
    ),
  )
  const root = spans.find((span) => span.name === 'build')
  t.equal(attribute(root?.attributes, 'platform.application.id'), app.id)
  t.equal(attribute(root?.attributes, 'platform.build.status'), 'succeeded')
  const steps = spans
    .filter((span) => span.parentSpanId === root?.spanId)
    .sort((a, b) => Number(BigInt(a.startTimeUnixNano) - BigInt(b.startTimeUnixNano)))
  t.same(
    steps.map((span) => attribute(span.attributes, 'platform.build.step')),
    ['queue wait', 'bundle', 'componentize', 'push'],
  )
  t.ok(
    steps.every(
      (span) => span.traceId === root?.traceId && BigInt(span.endTimeUnixNano) <= BigInt(root.endTimeUnixNano),
    ),
    `every step inside the build span: ${JSON.stringify([root, ...steps].map((span) => [span?.name, span?.startTimeUnixNano, span?.endTimeUnixNano]))}`,
  )

  await untilDeployed(control, app.id)
  const deployed = await collector.waitFor(
    (spans) => spans.some((span) => span.name === 'deploy'),
    30_000,
    'the deploy span',
  )
  const deploy = deployed.filter((span) => span.name === 'deploy')
  t.same(
    deploy.map((span) => [
      attribute(span.attributes, 'platform.application.id'),
      attribute(span.attributes, 'platform.deploy.reason'),
      span.status?.code ?? 0,
    ]),
    [[app.id, 'changed', 0]],
    'one deploy: the new build applied, and no span for the reconciles that found it in sync',
  )
  const reply = await control.call('POST', `/applications/${app.id}/functions/${fn.id}/invoke`, {
    json: {
      method: 'GET',
      path: `/fetch?url=${origin}/&token=${token}`,
      headers: { authorization: [`Bearer ${token}`] },
    },
  })
  t.equal(reply.status, 200, reply.text)
  t.match((reply.body as { body: string }).body, /^fetched 200 pong/, 'the function reached the service')
  const invoked = await collector.waitFor(
    (spans) => spans.some((span) => span.name === 'invoke'),
    30_000,
    'the invoke span',
  )
  const invoke = invoked.find((span) => span.name === 'invoke')
  t.equal(attribute(invoke?.attributes, 'platform.application.id'), app.id)
  t.equal(attribute(invoke?.attributes, 'platform.function.id'), fn.id)
  t.equal(attribute(invoke?.attributes, 'http.response.status_code'), '200', 'the function answered 200')
  // One trace from the invoke to the function's own outgoing request, through the worker.
  t.same(received, [`00-${invoke?.traceId}-${invoke?.spanId}-01`], 'the service got the invoke span as its parent')
  const exported = collector.exported()
  t.ok(exported.length > 0, 'precondition: spans were exported')
  for (const [what, value] of Object.entries({ plain, secret, token }))
    t.notOk(exported.includes(value), `no ${what} value anywhere in what was exported`)
})
