// The attach: every check of a WebSocket upgrade on /relay/{id}, all synchronous, so the
// request is still valid when the relay upgrades it. Each refusal is counted by reason and,
// but for a 409, against the client address's failed-attach limit.
import { HttpError } from '../errors.js'
import type { AttachRefusal } from '../http/metrics.js'
import { bearerCredentials, sendError } from '../http/responses.js'
import { clientAddress } from '../http/admission.js'
import type { HttpRequest, HttpResponse, us_socket_context_t } from '../http/uws.js'
import type { PeerData } from '../session/session.js'
import { isWellFormedToken } from '../session/tokens.js'
import type { DataPlaneDeps } from './deps.js'

export function attachUpgrade(deps: DataPlaneDeps) {
  const { table, metrics, attachFailures } = deps

  function refuse(res: HttpResponse, address: string, reason: AttachRefusal, status: number, message: string): void {
    metrics.attachRefused[reason]++
    // A 409 needs the right token, so it is no guess: a peer that retries while the relay has
    // not yet noticed its old connection is gone must not lock itself out.
    if (reason !== 'conflict') attachFailures.hit(address)
    sendError(res, new HttpError(status, message))
  }

  return (res: HttpResponse, req: HttpRequest, context: us_socket_context_t): void => {
    // Every check is synchronous, so the request is still valid when we upgrade.
    // The limit comes first: an address that keeps guessing learns nothing more, not even
    // whether a token it tries now would have been right.
    const address = clientAddress(res)
    const wait = attachFailures.retryAfter(address)
    if (wait > 0) {
      metrics.attachRefused.rate_limited++
      return sendError(
        res,
        new HttpError(429, 'too many refused attaches from this address', { 'retry-after': String(wait) }),
      )
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
  }
}

/** The slot token from `Authorization: Bearer` or, for browsers, the `token` query parameter. */
function slotToken(authorization: string, query: string): string {
  const fromHeader = bearerCredentials(authorization)
  if (fromHeader !== null) return fromHeader
  if (query === '') return ''
  return new URLSearchParams(query).get('token') ?? ''
}
