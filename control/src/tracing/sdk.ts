// The OpenTelemetry Node SDK, started before the application is loaded (main.ts) when
// configured.ts says so: OTLP over HTTP to the endpoint the standard OTEL_* variables name
// (OTEL_EXPORTER_OTLP_*, OTEL_BSP_*, OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES,
// OTEL_TRACES_SAMPLER) when one is set, the in-memory store's processor (store.ts) when traces
// are kept, or both; W3C trace context, and the HTTP, Fastify and pg instrumentations.
// Traces only: the control plane's metrics are Prometheus's (metrics/).
import { register } from 'node:module'
import { FastifyOtelInstrumentation } from '@fastify/otel'
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http'
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http'
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg'
import { NodeSDK, resources, tracing } from '@opentelemetry/sdk-node'
import { redactAttributes } from './redact.js'

type ReadableSpan = tracing.ReadableSpan
type SpanExporter = tracing.SpanExporter

// Every span passes through here on its way out: a view of it whose attributes and events'
// attributes have no query string, the span itself untouched.
function redactingExporter(inner: SpanExporter): SpanExporter {
  const redact = (span: ReadableSpan): ReadableSpan =>
    Object.create(span, {
      attributes: { value: redactAttributes(span.attributes) },
      events: {
        value: span.events.map((event) =>
          event.attributes === undefined ? event : { ...event, attributes: redactAttributes(event.attributes) },
        ),
      },
    }) as ReadableSpan
  return {
    export: (spans, done) => inner.export(spans.map(redact), done),
    shutdown: () => inner.shutdown(),
    forceFlush: () => inner.forceFlush?.() ?? Promise.resolve(),
  }
}

export type Tracing = { shutdown(): Promise<void> }

/**
 * Starts the SDK, exporting over OTLP when `exportOtlp`, and feeding `processors` (the store's)
 * every span; the caller imports the application only after this returns.
 */
export function startTracing(options: { exportOtlp: boolean; processors?: tracing.SpanProcessor[] }): Tracing {
  const exporting = options.exportOtlp
    ? [new tracing.BatchSpanProcessor(redactingExporter(new OTLPTraceExporter()))]
    : []
  // pg and Fastify are imported from ES modules: their instrumentations see them only through
  // the loader hook, which must be in place before either is imported. Only they go through it:
  // the hook parses every module it is given, which on a busy machine doubled the start.
  register('@opentelemetry/instrumentation/hook.mjs', import.meta.url, { data: { include: ['fastify', 'pg'] } })
  const sdk = new NodeSDK({
    serviceName: process.env.OTEL_SERVICE_NAME ?? 'session-relay-control',
    // The process detector would export the command line, which may carry a database URL with
    // its password; the host's name and the operator's OTEL_RESOURCE_ATTRIBUTES are enough.
    resourceDetectors: [resources.envDetector, resources.hostDetector],
    spanProcessors: [...exporting, ...(options.processors ?? [])],
    metricReaders: [],
    logRecordProcessors: [],
    instrumentations: [
      new HttpInstrumentation({
        // Readiness probes and scrapes would drown the traces that matter.
        ignoreIncomingRequestHook: (request) => /^\/(healthz|readyz|metrics)\b/.test(request.url ?? ''),
      }),
      new FastifyOtelInstrumentation({ registerOnInitialization: true }),
      new PgInstrumentation({ requireParentSpan: true }),
    ],
  })
  sdk.start()
  return { shutdown: () => sdk.shutdown() }
}
