// A route's requests as spans when tracing is on (tracing/hooks.ts): each request has
// its span, which ends with the status send() writes, or when the client goes away first. Off,
// the route's own handler is registered and nothing here runs.
import type { RelayTracing, RequestTrace } from '../tracing/hooks.js'
import { onAnswered } from './responses.js'
import type { HttpRequest, HttpResponse } from './uws.js'

type Handler = (res: HttpResponse, req: HttpRequest) => void

// Each traced request's span, by its response: a handler finds it after its awaits.
const traces = new WeakMap<HttpResponse, RequestTrace>()

/** The span of the request `res` answers; null when tracing is off. */
export function requestTraceOf(res: HttpResponse): RequestTrace | null {
  return traces.get(res) ?? null
}

/** `route` is the template the span names (`/admin/sessions/{id}`), never the path asked for. */
export function traced(tracing: RelayTracing | null, route: string, handler: Handler): Handler {
  if (tracing === null) return handler
  return (res, req) => {
    // Read now: uWS invalidates the request when the handler returns.
    const headers = { traceparent: req.getHeader('traceparent'), tracestate: req.getHeader('tracestate') }
    tracing.request(req.getCaseSensitiveMethod(), route, headers, (answered, trace) => {
      traces.set(res, trace)
      onAnswered(res, answered)
      handler(res, req)
    })
  }
}
