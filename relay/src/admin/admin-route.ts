// What every admin route does before its handler: copy what it needs from the request (uWS
// invalidates it at the first await), CORS, the failed-authentication limit, the body cap,
// authentication, and the one place that turns refusals into `{"error": ...}` responses.
import type { JWTPayload } from 'jose'
import type { Authenticator, Scope } from '../auth.js'
import { HttpError } from '../errors.js'
import type { AddressLimiter } from '../http/admission.js'
import { clientAddress } from '../http/admission.js'
import { corsHeaders } from '../http/cors.js'
import type { Metrics } from '../http/metrics.js'
import type { OriginPolicy } from '../http/origins.js'
import type { Readiness } from '../http/readiness.js'
import type { LimitPolicy } from './session-limits.js'
import type { Headers } from '../http/responses.js'
import { readBody, sendError, trackAbort } from '../http/responses.js'
import type { HttpRequest, HttpResponse } from '../http/uws.js'
import type { Logger } from '../logger.js'
import type { SessionTable } from '../session/table.js'
import type { RelayTracing } from '../tracing/hooks.js'

/** POST /admin/sessions takes a few limits (session-limits.ts); anything bigger than this is not a request for one. */
const MAX_ADMIN_BODY_BYTES = 16 * 1024

export type AdminDeps = {
  table: SessionTable
  /** null when auth is disabled. */
  auth: Authenticator | null
  allowsOrigin: OriginPolicy
  publicBaseUrl: string
  logger: Logger
  metrics: Metrics
  /** Admin 401s per client address; past the limit its admin requests answer 429 unverified. */
  authFailures: AddressLimiter
  /** Sessions created per client address. */
  creates: AddressLimiter
  /** Sessions the table may hold; creation past it answers 503. */
  maxSessions: number
  /** What a 503 for a full table tells clients to wait: a sweep frees closed sessions. */
  fullRetryAfterSeconds: number
  /** Draining: creation answers 503, every other admin route still serves. */
  readiness: Readiness
  /** Sessions one caller may hold at once; null: no cap of its own. */
  maxSessionsPerCaller: number | null
  /** The token claim that names the caller. */
  callerClaim: string
  /** Per-session limits: the defaults and maxima a create body is held to. */
  limits: LimitPolicy
  /** A span per request (http/traced.ts); null: tracing off. */
  tracing: RelayTracing | null
}

/** What a handler gets of the request, read before any await, and who the caller is. */
type AdminRequest = { id: string; address: string; caller: string; query: string; body: Buffer | null; cors: Headers }

/**
 * Who asks, for the per-caller cap: the token's claim, else the client address. The prefixes
 * keep a claim that looks like an address from sharing that address's count.
 */
function callerOf(claims: JWTPayload | null, claim: string, address: string): string {
  const value = claims?.[claim]
  return typeof value === 'string' && value !== '' ? `claim:${value}` : `address:${address}`
}
/** Answers the request, or throws an HttpError for adminRoute to send. */
export type AdminHandler = (res: HttpResponse, request: AdminRequest) => void

export function adminRoute(deps: AdminDeps, scope: Scope, withBody: boolean, handle: AdminHandler) {
  return (res: HttpResponse, req: HttpRequest): void => {
    const authorization = req.getHeader('authorization')
    const cors = corsHeaders(deps.allowsOrigin, req.getHeader('origin'), req.getHeader('host')) ?? {}
    const address = clientAddress(res)
    // Checked before the token: an address past the limit costs no signature check.
    const wait = deps.authFailures.retryAfter(address)
    if (wait > 0) {
      deps.metrics.adminRefused.auth_failures++
      return sendError(
        res,
        new HttpError(429, 'too many failed authentications from this address', { 'retry-after': String(wait) }),
        cors,
      )
    }
    const id = withBody ? '' : (req.getParameter(0) ?? '')
    const query = req.getQuery() ?? ''
    const declaredLength = Number(req.getHeader('content-length') || 0)
    if (withBody && declaredLength > MAX_ADMIN_BODY_BYTES) {
      return sendError(res, new HttpError(413, `request body larger than ${MAX_ADMIN_BODY_BYTES} bytes`), cors)
    }
    trackAbort(res)
    const body = withBody ? readBody(res, MAX_ADMIN_BODY_BYTES) : Promise.resolve(null)
    const authorized = deps.auth === null ? Promise.resolve(null) : deps.auth.authorize(authorization, scope)
    Promise.all([body, authorized])
      .then(([bytes, claims]) => {
        handle(res, { id, address, caller: callerOf(claims, deps.callerClaim, address), query, body: bytes, cors })
      })
      .catch((error: unknown) => {
        if (error instanceof HttpError) {
          if (error.status === 401) deps.authFailures.hit(address)
          return sendError(res, error, cors)
        }
        deps.logger.error({ err: error }, 'admin request failed')
        sendError(res, new HttpError(500, 'internal error'), cors)
      })
  }
}
