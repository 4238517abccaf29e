// The control plane's own spans, opened through the OpenTelemetry API: without the SDK
// (tracing/configured.ts) the API's tracer is a no-op, so these cost a function call. An error
// is recorded by its stable code only: its message may quote the caller's input.
import { SpanStatusCode, trace } from '@opentelemetry/api'
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
