import type { AddressLimiter } from '../http/admission.js'
import { clientAddress } from '../http/admission.js'
import { CLOSE_CODES } from './close-codes.js'
import { HttpError } from '../errors.js'
import type { Forwarder } from './forwarding.js'
import { bearerCredentials, sendError } from '../http/responses.js'
import type { Logger } from '../logger.js'
import type { AttachRefusal, Metrics } from '../http/metrics.js'
import type { OriginPolicy } from '../http/origins.js'
import type { PeerData, Slot } from '../session/session.js'
import type { SessionTable } from '../session/table.js'
import { isWellFormedToken } from '../session/tokens.js'
import type { HttpRequest, HttpResponse, us_socket_context_t, WebSocketBehavior } from '../http/uws.js'

export type DataPlaneDeps = {
  table: SessionTable
  forwarder: Forwarder
  metrics: Metrics
  logger: Logger
  allowsOrigin: OriginPolicy
  /** -1: no limit of its own (the per-connection backlog still bounds a message). */
  maxFrameSize: number
  maxBacklog: number
  /** Refused attaches per client address; past the limit every attach from it answers 429. */
  attachFailures: AddressLimiter
}

/** What uWS 20.30 reports when it closes a connection for a message above maxPayloadLength. */
const TOO_BIG_MESSAGE = 'Received too big message'
/** Close both sides if a peer answers no ping for this long; uWS pings automatically. */
const IDLE_TIMEOUT_SECONDS = 120

export function dataPlaneBehavior (deps: DataPlaneDeps): WebSocketBehavior<PeerData> {
  const { table, forwarder, metrics, logger } = deps

  const { attachFailures } = deps

  function refuse (res: HttpResponse, address: string, reason: AttachRefusal, status: number, message: string): void {
    metrics.attachRefused[reason]++
    // A 409 needs the right token, so it is no guess: a peer that retries while the relay has
    // not yet noticed its old connection is gone must not lock itself out.
    if (reason !== 'conflict') attachFailures.hit(address)
    sendError(res, new HttpError(status, message))
  }

  const maxPayloadLength = deps.maxFrameSize === -1 ? deps.maxBacklog : deps.maxFrameSize
  return {
    compression: 0, // uWS.DISABLED: a relay of opaque payloads gains nothing from it
    maxPayloadLength,
    // uWS drops sends past this, the close frame too. The relay closes the session once a
    // backlog passes maxBacklog, by at most one message, so this much always leaves room for
    // the 4003 frame: a slow receiver that reads again gets it after the data queued before
    // it, instead of a bare 1006.
    maxBackpressure: deps.maxBacklog + maxPayloadLength,
    closeOnBackpressureLimit: false as unknown as number, // a boolean at run time, typed as a number in 20.30
    idleTimeout: IDLE_TIMEOUT_SECONDS,
    sendPingsAutomatically: true,

    upgrade (res: HttpResponse, req: HttpRequest, context: us_socket_context_t): void {
      // Every check is synchronous, so the request is still valid when we upgrade.
      // The limit comes first: an address that keeps guessing learns nothing more, not even
      // whether a token it tries now would have been right.
      const address = clientAddress(res)
      const wait = attachFailures.retryAfter(address)
      if (wait > 0) {
        metrics.attachRefused.rate_limited++
        return sendError(res, new HttpError(429, 'too many refused attaches from this address', { 'retry-after': String(wait) }))
      }
      const key = req.getHeader('sec-websocket-key')
      if (key === '' || req.getHeader('sec-websocket-version') !== '13') {
        return refuse(res, address, 'bad_request', 400, 'invalid websocket upgrade request')
      }
      // Browsers always send Origin on a WebSocket upgrade; other clients need not, and an
      // Origin check protects nothing against a client that chooses its own headers.
      const origin = req.getHeader('origin')
      if (origin !== '' && !deps.allowsOrigin(origin, req.getHeader('host'))) {
        return refuse(res, address, 'origin', 403, 'origin not allowed')
      }
      const session = table.find(req.getParameter(0) ?? '')
      if (session === undefined) return refuse(res, address, 'not_found', 404, 'session not found')
      const token = slotToken(req.getHeader('authorization'), req.getQuery() ?? '')
      if (token === '') return refuse(res, address, 'unauthorized', 401, 'missing slot token')
      if (!isWellFormedToken(token)) return refuse(res, address, 'unauthorized', 401, 'invalid slot token')
      const slot = table.slotForToken(session, token)
      if (slot === null || session.closed) return refuse(res, address, 'unauthorized', 401, 'invalid slot token')
      if (slot.peer !== null) return refuse(res, address, 'conflict', 409, 'slot already connected')
      // The relay chooses no subprotocol for its peers, but a client that offered some
      // gets the first one back, since browsers fail the handshake otherwise.
      const protocol = req.getHeader('sec-websocket-protocol').split(',')[0]?.trim() ?? ''
      res.upgrade<PeerData>({ slot, ended: false }, key, protocol, '', context)
    },

    open (ws): void {
      const slot = ws.getUserData().slot
      table.attach(slot, ws)
      forwarder.deliverHeld(slot)
    },

    message (ws, message, isBinary): void {
      const data = ws.getUserData()
      if (!data.ended) forwarder.forward(data.slot, message, isBinary)
    },

    // uWS has queued the pong by now; see pinged() in backlog-limits.ts for why it counts.
    ping (ws): void {
      forwarder.pinged(ws)
    },

    drain (ws): void {
      const data = ws.getUserData()
      if (data.ended) table.closingDrained(ws)
      else forwarder.drained(data.slot)
    },

    close (ws, code, message): void {
      const data = ws.getUserData()
      if (data.ended) {
        table.closingGone(ws) // the relay closed it and has accounted for the rest
        return
      }
      data.ended = true
      const slot: Slot = data.slot
      table.releasePeer(slot)
      if (code === CLOSE_CODES.abnormal.code) {
        const reason = Buffer.from(message).toString()
        if (reason === TOO_BIG_MESSAGE) {
          metrics.framesTooBig++
          logger.info({ session: slot.session.id, slot: slot.name, limit: deps.maxFrameSize }, 'message above the frame size limit')
        }
        table.dropped(slot, reason === '' ? 'connection lost' : reason)
        return
      }
      // A close frame is a deliberate end: the counterpart gets the same code and reason.
      table.close(slot.session, { reason: 'peer_closed', frame: { code, message: new Uint8Array(message).slice() }, remove: false })
    },
  }
}

/** The slot token from `Authorization: Bearer` or, for browsers, the `token` query parameter. */
function slotToken (authorization: string, query: string): string {
  const fromHeader = bearerCredentials(authorization)
  if (fromHeader !== null) return fromHeader
  if (query === '') return ''
  return new URLSearchParams(query).get('token') ?? ''
}
