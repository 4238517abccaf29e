// What a client controls of an admin request's span (relay/src/tracing/spans.ts): its method and
// its traceparent and tracestate headers. Whatever they hold, the span's name is one of a fixed
// set, its attributes are the fixed keys with values the relay chose, and a trace context is
// continued only when it is well formed: a hostile request cannot grow a span or name one.
// Through the SDK's own in-memory exporter in this process, where relay.test.ts uses the
// compiled relay and the collector.
import fc from 'fast-check'
import t from 'tap'
import { core, tracing as sdk } from '@opentelemetry/sdk-node'
import { relayTracing } from '@session-relay/relay/tracing/spans'
import { fuzzOptions } from '../helpers/fuzz.js'

// As sdk.ts makes them, with nothing registered globally; the spans kept in memory.
const exporter = new sdk.InMemorySpanExporter()
const provider = new sdk.BasicTracerProvider({ spanProcessors: [new sdk.SimpleSpanProcessor(exporter)] })
t.teardown(() => provider.shutdown())
const tracer = provider.getTracer('test')
const propagator = new core.W3CTraceContextPropagator()

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'OPTIONS', 'PATCH']
const ROUTE = '/admin/sessions/{id}'
const KEYS = ['http.request.method', 'http.route', 'http.response.status_code', 'error.type']
const hex = (length: number) =>
  fc.string({ unit: fc.constantFrom(...'0123456789abcdef'), minLength: length, maxLength: length })

t.test('any method and trace headers: a fixed name, fixed keys, a parent only when well formed', async (t) => {
  const tracing = relayTracing(tracer, propagator)
  const wellFormed = fc
    .tuple(hex(32), hex(16))
    .filter(([trace, span]) => !/^0+$/.test(trace) && !/^0+$/.test(span))
    .map(([trace, span]) => `00-${trace}-${span}-01`)
  fc.assert(
    fc.property(
      fc.oneof(fc.constantFrom(...METHODS), fc.string({ maxLength: 2_000 })),
      fc.oneof(wellFormed, fc.string({ maxLength: 2_000 })),
      fc.string({ maxLength: 8_000 }),
      fc.option(fc.integer({ min: 100, max: 599 })),
      (method, traceparent, tracestate, status) => {
        exporter.reset()
        tracing.request(method, ROUTE, { traceparent, tracestate }, (answered) => answered(status))
        const [span, ...more] = exporter.getFinishedSpans()
        if (span === undefined || more.length > 0) return false
        const known = METHODS.includes(method) ? method : '_OTHER'
        if (span.name !== `${known} ${ROUTE}`) return false
        if (!Object.keys(span.attributes).every((key) => KEYS.includes(key))) return false
        if (span.attributes['http.request.method'] !== known) return false
        const valid = /^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/.test(traceparent)
        if (span.parentSpanContext?.spanId !== (valid ? traceparent.slice(36, 52) : undefined)) return false
        // The trace state is the propagator's, bounded by its own limits, whatever came in.
        return span.spanContext().traceState === undefined || span.spanContext().traceState!.serialize().length <= 512
      },
    ),
    fuzzOptions(),
  )
  t.pass('every request made one bounded span')
})
