// The relay's spans, through the OpenTelemetry API with the tracer and propagator sdk.ts
// hands it: loaded only with the SDK, so these calls always record. A span's parent is always
// given, never taken from an ambient context, so no context manager (Node's async hooks) runs. What goes into an attribute is chosen here, field by field: a
// method from a fixed set, a route template, a status, a session id, counts and close codes;
// never a header's value, a query string, a token or anything a peer sent.
import { defaultTextMapGetter, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api'
import type { Context, Span, TextMapPropagator, Tracer } from '@opentelemetry/api'
import type { Session, Slot } from '../session/session.js'
import type { RelayTracing, RequestTrace, SessionTracing, TraceHeaders } from './hooks.js'

// A method outside these is `_OTHER`, as the HTTP conventions say: a client picks the method,
// and a span name must not be whatever it sent.
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'OPTIONS', 'PATCH'])

function carrierOf(headers: TraceHeaders): Record<string, string> {
  const carrier: Record<string, string> = {}
  if (headers.traceparent !== '') carrier.traceparent = headers.traceparent
  if (headers.tracestate !== '') carrier.tracestate = headers.tracestate
  return carrier
}

// What the rest of the relay holds of a request's span is this context, under an opaque type.
const asTrace = (context: Context): RequestTrace => context as unknown as RequestTrace
const asContext = (request: RequestTrace): Context => request as unknown as Context

function requests(tracer: Tracer, propagator: TextMapPropagator): RelayTracing['request'] {
  return (method, route, headers, handle) => {
    const known = METHODS.has(method) ? method : '_OTHER'
    const parent = propagator.extract(ROOT_CONTEXT, carrierOf(headers), defaultTextMapGetter)
    const span = tracer.startSpan(
      `${known} ${route}`,
      { kind: SpanKind.SERVER, attributes: { 'http.request.method': known, 'http.route': route } },
      parent,
    )
    let ended = false
    const answered = (status: number | null): void => {
      if (ended) return
      ended = true
      if (status === null) span.setAttribute('error.type', 'aborted')
      else {
        span.setAttribute('http.response.status_code', status)
        if (status >= 500) {
          span.setAttribute('error.type', String(status))
          span.setStatus({ code: SpanStatusCode.ERROR })
        }
      }
      span.end()
    }
    handle(answered, asTrace(trace.setSpan(parent, span)))
  }
}

function sessionTracing(tracer: Tracer): SessionTracing {
  // Kept beside the sessions, not on them: the hot path's objects keep their shape whether
  // tracing is on or off.
  const sessions = new WeakMap<Session, Span>()
  const attaches = new WeakMap<Slot, Span>()

  const endAttach = (slot: Slot, how: 'dropped' | 'closed'): void => {
    const span = attaches.get(slot)
    if (span === undefined) return
    attaches.delete(slot)
    span.setAttribute('relay.attach.end', how)
    span.end()
  }

  return {
    created(session, request) {
      const { limits } = session
      const span = tracer.startSpan(
        'relay session',
        {
          attributes: {
            'relay.session.id': session.id,
            'relay.session.ttl_seconds': limits.ttlMs / 1000,
            ...(limits.maxBytes === null ? {} : { 'relay.session.max_bytes': limits.maxBytes }),
            ...(limits.bytesPerSecond === null ? {} : { 'relay.session.bytes_per_second': limits.bytesPerSecond }),
          },
        },
        request === null ? ROOT_CONTEXT : asContext(request),
      )
      sessions.set(session, span)
    },
    attached(slot) {
      const parent = sessions.get(slot.session)
      if (parent === undefined) return
      endAttach(slot, 'dropped') // never open here: a slot holds one peer at a time
      const span = tracer.startSpan(
        'relay attach',
        { attributes: { 'relay.session.id': slot.session.id, 'relay.slot': slot.name } },
        trace.setSpan(ROOT_CONTEXT, parent),
      )
      attaches.set(slot, span)
    },
    dropped: (slot) => endAttach(slot, 'dropped'),
    closed(session, reason, code) {
      endAttach(session.initiator, 'closed')
      endAttach(session.responder, 'closed')
      const span = sessions.get(session)
      if (span === undefined) return
      sessions.delete(session)
      span.setAttributes({
        'relay.session.close_reason': reason,
        'relay.session.close_code': code,
        'relay.session.bytes_in': session.bytesIn,
        'relay.session.bytes_out': session.initiator.bytesOut + session.responder.bytesOut,
        'relay.session.initiator_to_responder_bytes': session.responder.bytesOut,
        'relay.session.responder_to_initiator_bytes': session.initiator.bytesOut,
      })
      span.end()
    },
  }
}

export function relayTracing(tracer: Tracer, propagator: TextMapPropagator): RelayTracing {
  return { sessions: sessionTracing(tracer), request: requests(tracer, propagator) }
}
