// A route's requests as spans when tracing is on (tracing/hooks.ts): each request runs inside
// its span, which ends with the status send() writes, or when the client goes away first. Off,
// the route's own handler is registered and nothing here runs.
import type { RelayTracing } from '../tracing/hooks.js'
import { onAnswered } from './responses.js'
import type { HttpRequest, HttpResponse } from './uws.js'

type Handler = (res: HttpResponse, req: HttpRequest) => void

/** `route` is the template the span names (`/admin/sessions/{id}`), never the path asked for. */
export function traced(tracing: RelayTracing | null, route: string, handler: Handler): Handler {
  if (tracing === null) return handler
  return (res, req) => {
    // Read now: uWS invalidates the request when the handler returns.
    const headers = { traceparent: req.getHeader('traceparent'), tracestate: req.getHeader('tracestate') }
    tracing.request(req.getCaseSensitiveMethod(), route, headers, (answered) => {
      onAnswered(res, answered)
      handler(res, req)
    })
  }
}
