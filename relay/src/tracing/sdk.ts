// The OpenTelemetry SDK for the relay, started by main.ts only when the OTEL_* variables name
// an endpoint (common/src/tracing/configured.ts): OTLP over HTTP, configured by the standard
// variables (OTEL_EXPORTER_OTLP_*, OTEL_BSP_*, OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES,
// OTEL_TRACES_SAMPLER), W3C trace context. The trace SDK's base alone, not the Node SDK the
// control plane starts: the relay instruments nothing (uWebSockets.js is not Node's http) and
// hands its spans their parents itself (spans.ts). So nothing is registered globally, and no
// context manager puts Node's async hooks on every callback of the process, the data plane's
// included.
import { W3CTraceContextPropagator } from '@opentelemetry/core'
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http'
import { detectResources, envDetector, hostDetector, resourceFromAttributes } from '@opentelemetry/resources'
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base'
import type { RelayTracing } from './hooks.js'
import { relayTracing } from './spans.js'

export type Tracing = { tracing: RelayTracing; shutdown(): Promise<void> }

export function startTracing(): Tracing {
  // The host's name and the operator's OTEL_RESOURCE_ATTRIBUTES, which win over the default
  // name; not the process detector's command line, which may name a key file.
  const resource = resourceFromAttributes({ 'service.name': 'session-relay-relay' }).merge(
    detectResources({ detectors: [envDetector, hostDetector] }),
  )
  const provider = new BasicTracerProvider({
    resource,
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
  })
  const tracer = provider.getTracer('session-relay-relay')
  return { tracing: relayTracing(tracer, new W3CTraceContextPropagator()), shutdown: () => provider.shutdown() }
}
