// The control plane's own spans, opened through the OpenTelemetry API: without the SDK
// (tracing/configured.ts) the API's tracer is a no-op, so these cost a function call. An error
// is recorded by its stable code only: its message may quote the caller's input.
import { context, propagation, SpanStatusCode, trace } from '@opentelemetry/api'
import type { Attributes, Span } from '@opentelemetry/api'

const tracer = trace.getTracer('session-relay-control')

function errorCode(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code
  return typeof code === 'string' ? code : error instanceof Error ? error.name : 'unknown'
}

/** Runs `work` inside a span named `name`, a child of the active one; ends it however `work` ends. */
export async function inSpan<T>(name: string, attributes: Attributes, work: (span: Span) => Promise<T>): Promise<T> {
  return tracer.startActiveSpan(name, { attributes }, async (span) => {
    try {
      return await work(span)
    } catch (error) {
      span.setAttribute('error.type', errorCode(error))
      span.setStatus({ code: SpanStatusCode.ERROR })
      throw error
    } finally {
      span.end()
    }
  })
}

/**
 * The active trace context as the request headers W3C trace context names (`traceparent`,
 * `tracestate`), replacing any the caller put there: the request goes out under the active span.
 * Set here rather than left to the HTTP instrumentation so that every runtime's path to the
 * function (a worker's port, the Service proxy) carries it. Without the SDK nothing is set.
 */
export function carryTraceContext(headers: Record<string, string[]>): void {
  const carrier: Record<string, string> = {}
  propagation.inject(context.active(), carrier)
  for (const [name, value] of Object.entries(carrier)) headers[name.toLowerCase()] = [value]
}
