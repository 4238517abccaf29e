// The in-memory trace store (control/src/tracing/store.ts), fed by the real SDK's tracer: the
// last N traces that named an application are kept and the oldest dropped, a trace holds at most
// its cap of spans and characters, names and values are cut, undecided traces are bounded, and
// megabyte attributes leave nothing behind in the heap.
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import fc from 'fast-check'
import t from 'tap'
import { context, SpanStatusCode, trace } from '@opentelemetry/api'
import type { Attributes, Tracer } from '@opentelemetry/api'
import { tracing } from '@opentelemetry/sdk-node'
import type { TraceLimits, TraceStore } from '@session-relay/control/tracing/store'
import { createTraceStore, DEFAULT_TRACE_LIMITS } from '@session-relay/control/tracing/store'
import { fuzzOptions } from '../helpers/fuzz.js'

setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void

function fed(limits: TraceLimits): { store: TraceStore; tracer: Tracer; close: () => Promise<void> } {
  const store = createTraceStore(limits)
  const provider = new tracing.BasicTracerProvider({ spanProcessors: [store.processor] })
  return { store, tracer: provider.getTracer('store-test'), close: () => provider.shutdown() }
}

type Shape = {
  /** The span (by index) that names the application, if any. */
  appAt: number | null
  children: Array<{ name: string; attributes: Attributes; failed: boolean }>
  /** The root never ends (a request still open). */
  open: boolean
}

/** One trace as a request makes it: a root, children ending in turn, the root last. */
function play(tracer: Tracer, shape: Shape, appId: string): string {
  const root = tracer.startSpan('root')
  const within = trace.setSpan(context.active(), root)
  shape.children.forEach((child, index) => {
    const attributes =
      index === shape.appAt ? { ...child.attributes, 'platform.application.id': appId } : child.attributes
    const span = tracer.startSpan(child.name, { attributes }, within)
    if (child.failed) span.setStatus({ code: SpanStatusCode.ERROR })
    span.end()
  })
  if (!shape.open) root.end()
  return root.spanContext().traceId
}

const text = fc.oneof(fc.string({ maxLength: 20 }), fc.string({ minLength: 200, maxLength: 400 }))
const value = fc.oneof(text, fc.integer(), fc.boolean(), fc.array(text, { maxLength: 30 }))
const shape: fc.Arbitrary<Shape> = fc
  .record({
    children: fc.array(
      fc.record({
        name: text,
        attributes: fc.dictionary(text, value, { maxKeys: 50 }),
        failed: fc.boolean(),
      }),
      { maxLength: 60 },
    ),
    appAt: fc.option(fc.nat(70)),
    open: fc.boolean(),
  })
  .map((drawn) => ({
    ...drawn,
    appAt: drawn.appAt !== null && drawn.appAt < drawn.children.length ? drawn.appAt : null,
  }))

const small: fc.Arbitrary<TraceLimits> = fc
  .record({
    traces: fc.integer({ min: 1, max: 8 }),
    spansPerTrace: fc.integer({ min: 1, max: 40 }),
    attributesPerSpan: fc.integer({ min: 0, max: 10 }),
    textChars: fc.integer({ min: 16, max: 300 }),
    traceChars: fc.integer({ min: 0, max: 5000 }),
    undecided: fc.integer({ min: 1, max: 6 }),
  })
  .map((limits) => ({ ...limits, traceChars: limits.textChars + limits.traceChars }))

t.test('the last N traces that named an application, each within its caps', async () => {
  await fc.assert(
    fc.asyncProperty(small, fc.array(shape, { maxLength: 20 }), async (limits, shapes) => {
      const { store, tracer, close } = fed(limits)
      const named: string[] = []
      shapes.forEach((one, index) => {
        const traceId = play(tracer, one, `app-${index}`)
        if (one.appAt !== null) named.push(traceId)
      })
      await close()
      const expected = named.slice(-limits.traces)
      const listed = store.list().map((summary) => summary.traceId)
      // The ring keeps the last N that named an application, listed newest first.
      if (listed.join() !== [...expected].reverse().join()) return false
      if (store.chars() > (limits.traces + limits.undecided) * limits.traceChars) return false
      for (const traceId of expected) {
        const kept = store.get(traceId)
        if (kept === null || kept.spans.length > limits.spansPerTrace) return false
        const one = shapes[Number(kept.appId.slice('app-'.length))] as Shape
        // Every span is either kept or counted (the root too, when it ended).
        if (kept.spans.length + kept.droppedSpans !== one.children.length + (one.open ? 0 : 1)) return false
        for (const span of kept.spans) {
          if (span.name.length > limits.textChars) return false
          const entries = Object.entries(span.attributes)
          if (entries.length > limits.attributesPerSpan) return false
          for (const [key, stored] of entries)
            if (key.length > limits.textChars || (typeof stored === 'string' && stored.length > limits.textChars))
              return false
        }
      }
      return true
    }),
    fuzzOptions(),
  )
})

// Exact times: [seconds, nanoseconds] since the epoch, which the SDK takes as they are.
const at = (ms: number): [number, number] => [Math.floor(ms / 1000), (ms % 1000) * 1e6]

t.test('a summary: the root name, the whole duration, error when any span failed', async (t) => {
  const { store, tracer, close } = fed({ traces: 4, ...DEFAULT_TRACE_LIMITS })
  const root = tracer.startSpan('POST /api/v1/applications/:appId/builds', { startTime: at(1_000) })
  const within = trace.setSpan(context.active(), root)
  // Ends before any span names the application: held undecided, then kept with the rest.
  tracer.startSpan('pg.query', { startTime: at(1_001) }, within).end(at(1_002))
  const build = tracer.startSpan(
    'build',
    { startTime: at(1_003), attributes: { 'platform.application.id': 'a1' } },
    within,
  )
  root.end(at(1_010))
  const step = tracer.startSpan('build compile', { startTime: at(1_004) }, trace.setSpan(context.active(), build))
  step.setStatus({ code: SpanStatusCode.ERROR })
  step.end(at(1_500))
  build.end(at(1_600))
  // Another application's span in the same trace (a caller reusing its id): not shown with it.
  tracer.startSpan('invoke', { attributes: { 'platform.application.id': 'a2' } }, within).end()
  // No application: never kept.
  tracer.startSpan('GET /api/v1/applications').end()
  await close()
  const [summary, ...more] = store.list()
  t.same(more, [])
  t.match(summary, { appId: 'a1', name: 'POST /api/v1/applications/:appId/builds', startMs: 1_000, status: 'error' })
  t.equal(summary?.durationMs, 600)
  const kept = store.get(summary?.traceId ?? '')
  t.same(
    kept?.spans.map((span) => [span.name, span.parentSpanId === null]),
    [
      ['POST /api/v1/applications/:appId/builds', true],
      ['pg.query', false],
      ['build', false],
      ['build compile', false],
    ],
  )
  t.equal(kept?.droppedSpans, 1, "the other application's span")
  t.same(store.list(new Set(['another'])), [], 'filtered by application')
  t.equal(store.get('0'.repeat(32)), null)
})

t.test('query strings are cut as on the way to a collector', async (t) => {
  const { store, tracer, close } = fed({ traces: 1, ...DEFAULT_TRACE_LIMITS })
  const attributes = { 'platform.application.id': 'a', 'url.full': 'http://h/p?access_token=x', 'url.query': 'a=b' }
  tracer.startSpan('invoke', { attributes }).end()
  await close()
  const [span] = store.get(store.list()[0]?.traceId ?? '')?.spans ?? []
  t.same(span?.attributes, { 'platform.application.id': 'a', 'url.full': 'http://h/p' })
})

t.test('megabyte names and values: the heap keeps no more than the caps', async (t) => {
  const limits = { traces: 20, ...DEFAULT_TRACE_LIMITS }
  const megabyte = (seed: number): string => `${'/path'.repeat(20)}?${String(seed).repeat(1 << 20)}`
  const grew: number[] = []
  // The first round loads and compiles what the second measures; each round's store lives
  // until the round ends, and the heap is read with it.
  for (let round = 0; round < 2; round++) {
    const store = createTraceStore(limits)
    const provider = new tracing.BasicTracerProvider({ spanProcessors: [store.processor] })
    const tracer = provider.getTracer('store-test')
    for (let i = 0; i < 4; i++) gc()
    const before = process.memoryUsage().heapUsed
    for (let i = 0; i < 60; i++) {
      // A URL whose redacted path is a slice of a megabyte, a megabyte name and value.
      const attributes = {
        'platform.application.id': `app-${i}`,
        'url.full': megabyte(i),
        'big.value': megabyte(i + 1).slice(1),
      }
      tracer.startSpan(megabyte(i + 2).slice(2), { attributes }).end()
    }
    await provider.shutdown()
    for (let i = 0; i < 4; i++) gc()
    grew.push(process.memoryUsage().heapUsed - before)
    t.equal(store.list().length, 20)
    t.ok(store.chars() <= 20 * limits.traceChars)
  }
  // Twenty traces kept whole would hold 60 MB (three megabytes each), or 20 MB if only the
  // redacted URL kept its megabyte; their caps hold about 13 K characters here.
  t.ok((grew[1] as number) < 512 * 1024, `the heap grew by ${grew[1]} bytes`)
})
