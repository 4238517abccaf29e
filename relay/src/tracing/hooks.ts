// The relay's tracing as the rest of the relay sees it: a few calls at the edges of a request
// and of a session's life, never per message. Types only: without an OTLP endpoint main.ts
// loads no implementation, every holder of these is null, and nothing of OpenTelemetry is
// imported (spans.ts is the implementation, sdk.ts starts it).
import type { CloseReason } from '../http/metrics.js'
import type { Session, Slot } from '../session/session.js'

/** A request's W3C trace context headers, '' when absent. */
export type TraceHeaders = { traceparent: string; tracestate: string }

/** Called once with the status sent, or null when the client went away first. */
export type Answered = (status: number | null) => void

/**
 * A request's span as its handler holds it, handed back to `created` so that a session is the
 * request's child. Explicit rather than an ambient context: an ambient one would need Node's
 * async hooks, a cost on every callback of the process, messages included.
 */
export type RequestTrace = { readonly relayRequestTrace: true }

export type SessionTracing = {
  /** A new session: its span runs until it closes, a child of the request that created it. */
  created(session: Session, request: RequestTrace | null): void
  /** A peer attached to the slot: an attach span, a child of the session's. */
  attached(slot: Slot): void
  /** The slot's peer was lost without a close frame; it may attach again. */
  dropped(slot: Slot): void
  /** The session closed with `code` to its peers: every span of it ends, with its byte counts. */
  closed(session: Session, reason: CloseReason, code: number): void
}

export type RelayTracing = {
  sessions: SessionTracing
  /**
   * Opens a server span for one request of `route` (a template, such as
   * `/admin/sessions/{id}`), continuing the caller's trace, and runs `handle` with it;
   * `answered` ends it.
   */
  request(
    method: string,
    route: string,
    headers: TraceHeaders,
    handle: (answered: Answered, trace: RequestTrace) => void,
  ): void
}
