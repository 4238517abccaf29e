// What the control plane's in-memory traces (--traces-kept, control/src/tracing/store.ts) cost in
// heap: N traces of an invoke's usual shape (an API request's spans as the HTTP and Fastify
// instrumentations make them, the invoke and its client span), and N traces each at every cap
// (128 spans, 32 attributes, 32 Ki characters), fed through the real SDK. Each figure is the
// heap with the store less the heap before it, both after full collections, following a first
// round that loads and compiles the code. Memory, not time: the machine's load does not change it.
//
//   npm run bench:trace-memory -- [N ...]   (default: 100 and 1000)
import { context, trace } from '@opentelemetry/api'
import type { Attributes, Tracer } from '@opentelemetry/api'
import { tracing } from '@opentelemetry/sdk-node'
import { createTraceStore, DEFAULT_TRACE_LIMITS } from '@session-relay/control/tracing/store'
import type { TraceStore } from '@session-relay/control/tracing/store'

const gc = (globalThis as { gc?: () => void }).gc
if (gc === undefined) throw new Error('run with node --expose-gc')

const id = (n: number): string =>
  `${n.toString(16).padStart(8, '0')}-5ca1-4e00-8000-00000000${String(n % 10000).padStart(4, '0')}`

// An invoke as the embedded test records it: 10 spans, the request's attributes as
// @opentelemetry/instrumentation-http and @fastify/otel set them.
function invoke(tracer: Tracer, n: number): void {
  const root = tracer.startSpan('POST /api/v1/applications/:appId/functions/:fnId/invoke', {
    attributes: {
      'http.request.method': 'POST',
      'url.path': `/api/v1/applications/${id(n)}/functions/${id(n + 1)}/invoke`,
      'url.scheme': 'http',
      'server.address': '127.0.0.1',
      'server.port': 8081,
      'network.peer.address': '127.0.0.1',
      'network.peer.port': 40000 + (n % 20000),
      'client.address': '127.0.0.1',
      'network.protocol.version': '1.1',
      'user_agent.original': 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0',
      'http.route': '/api/v1/applications/:appId/functions/:fnId/invoke',
      'http.response.status_code': 200,
    },
  })
  const inRoot = trace.setSpan(context.active(), root)
  const request = tracer.startSpan('request', { attributes: fastify('request') }, inRoot)
  const inRequest = trace.setSpan(context.active(), request)
  for (const hook of ['onRequest', 'onRequest', 'onRequest', 'preHandler'])
    tracer.startSpan(`${hook} - runtimeRoutes`, { attributes: fastify(hook) }, inRequest).end()
  const handler = tracer.startSpan('handler - runtimeRoutes', { attributes: fastify('handler') }, inRequest)
  const attributes: Attributes = {
    'platform.application.id': id(n),
    'platform.function.id': id(n + 1),
    'http.response.status_code': 200,
  }
  const span = tracer.startSpan('invoke', { attributes }, trace.setSpan(context.active(), handler))
  tracer
    .startSpan(
      'GET',
      {
        attributes: {
          'http.request.method': 'GET',
          'url.full': `http://127.0.0.1:${30000 + (n % 1000)}/`,
          'server.address': '127.0.0.1',
          'server.port': 30000 + (n % 1000),
          'network.peer.address': '127.0.0.1',
          'network.peer.port': 30000 + (n % 1000),
          'http.response.status_code': 200,
          'network.protocol.version': '1.1',
        },
      },
      trace.setSpan(context.active(), span),
    )
    .end()
  span.end()
  handler.end()
  tracer.startSpan('onResponse - runtimeRoutes', { attributes: fastify('onResponse') }, inRequest).end()
  request.end()
  root.end()
}

function fastify(hook: string): Attributes {
  return { 'fastify.type': hook, 'hook.name': `runtimeRoutes - ${hook}`, 'service.name': 'session-relay-control' }
}

// A trace at every cap: more spans than kept, each with more attributes than kept, each value
// longer than kept, new strings every time.
function atCaps(tracer: Tracer, n: number): void {
  const root = tracer.startSpan(`root ${n} ${'r'.repeat(400)}`, { attributes: { 'platform.application.id': id(n) } })
  const within = trace.setSpan(context.active(), root)
  for (let s = 0; s < 140; s++) {
    const attributes: Attributes = {}
    for (let a = 0; a < 36; a++) attributes[`key.${a}.${'k'.repeat(260)}`] = `${n}.${s}.${a}.${'v'.repeat(300)}`
    tracer.startSpan(`span ${s} ${'n'.repeat(400)}`, { attributes }, within).end()
  }
  root.end()
}

/** A store of `kept` filled twice over (the first half pushed out); the SDK's provider, which holds it, gone. */
async function filled(kept: number, make: (tracer: Tracer, n: number) => void): Promise<TraceStore> {
  const store = createTraceStore({ traces: kept, ...DEFAULT_TRACE_LIMITS })
  const provider = new tracing.BasicTracerProvider({ spanProcessors: [store.processor] })
  const tracer = provider.getTracer('trace-memory')
  for (let n = 0; n < kept * 2; n++) make(tracer, n)
  await provider.shutdown()
  if (store.list().length !== kept) throw new Error(`kept ${store.list().length}, not ${kept}`)
  return store
}

const settled = (): number => {
  for (let i = 0; i < 4; i++) gc?.()
  return process.memoryUsage().heapUsed
}

async function heldBy(kept: number, make: (tracer: Tracer, n: number) => void): Promise<number> {
  const before = settled()
  const store = await filled(kept, make)
  const after = settled()
  // Read after the heap: the store is alive when it is measured.
  if (store.chars() <= 0) throw new Error('an empty store')
  return after - before
}

const sizes = process.argv.slice(2).map(Number)
await heldBy(20, invoke)
await heldBy(5, atCaps)
const kib = (bytes: number): string => `${(bytes / 1024).toFixed(0)} KiB`
for (const kept of sizes.length > 0 ? sizes : [100, 1000]) {
  const usual = await heldBy(kept, invoke)
  const worst = await heldBy(kept, atCaps)
  console.log(
    `${kept} traces: invokes ${kib(usual)} (${kib(usual / kept)} each), at every cap ${kib(worst)} (${kib(worst / kept)} each)`,
  )
}
