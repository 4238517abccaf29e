import { CLOSE_CODES } from '../data-plane/close-codes.js'
import type { AddressLimiter } from '../http/admission.js'
import { clientAddress } from '../http/admission.js'
import type { Authenticator, Scope } from '../auth.js'
import { corsHeaders, preflightHeaders } from '../http/cors.js'
import { HttpError } from '../errors.js'
import type { Headers } from '../http/responses.js'
import { readBody, send, sendError, sendJson, trackAbort } from '../http/responses.js'
import type { Logger } from '../logger.js'
import type { Metrics } from '../http/metrics.js'
import type { OriginPolicy } from '../http/origins.js'
import type { Routes } from '../http/request-guard.js'
import { pageOf, parsePageQuery } from '../session/session-pages.js'
import type { CreatedSession, SessionTable } from '../session/table.js'
import { iso, viewOf } from '../session/session.js'
import type { HttpRequest, HttpResponse } from '../http/uws.js'

/** POST /admin/sessions takes no fields today; anything bigger than this is not a request for one. */
export const MAX_ADMIN_BODY_BYTES = 16 * 1024

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
}

type Request = { id: string; address: string; query: string; body: Buffer | null; cors: Headers }
type Handler = (res: HttpResponse, request: Request) => void

export function registerAdminRoutes (app: Routes, deps: AdminDeps): void {
  const { table } = deps

  app.post('/admin/sessions', adminRoute(deps, 'relay:session:create', true, (res, { address, body, cors }) => {
    if (body !== null && body.length > 0) requireJsonObject(body)
    // A full table refuses new sessions rather than evicting live ones.
    if (table.size() >= deps.maxSessions) {
      deps.metrics.adminRefused.sessions_full++
      throw new HttpError(503, 'session limit reached', { 'retry-after': String(deps.fullRetryAfterSeconds) })
    }
    const wait = deps.creates.take(address)
    if (wait > 0) {
      deps.metrics.adminRefused.create_rate++
      throw new HttpError(429, 'too many sessions created from this address', { 'retry-after': String(wait) })
    }
    const created = table.create()
    sendJson(res, 201, creationResult(created, deps.publicBaseUrl), {
      ...cors,
      'cache-control': 'no-store',
      location: `/admin/sessions/${created.session.id}`,
    })
  }))

  app.get('/admin/sessions', adminRoute(deps, 'relay:session:read', false, (res, { query, cors }) => {
    const page = pageOf(table.entries(), parsePageQuery(query), Date.now())
    const next = page.nextCursor === null ? {} : { next_cursor: page.nextCursor }
    sendJson(res, 200, { sessions: page.sessions.map(viewOf), ...next }, { ...cors, 'cache-control': 'no-store' })
  }))

  app.get('/admin/sessions/:id', adminRoute(deps, 'relay:session:read', false, (res, { id, cors }) => {
    const session = table.find(id)
    if (session === undefined) throw notFound()
    sendJson(res, 200, viewOf(session), { ...cors, 'cache-control': 'no-store' })
  }))

  app.del('/admin/sessions/:id', adminRoute(deps, 'relay:session:delete', false, (res, { id, cors }) => {
    const session = table.find(id)
    if (session === undefined) throw notFound()
    table.close(session, { reason: 'deleted', frame: CLOSE_CODES.deleted, remove: true })
    send(res, 204, '', cors)
  }))

  // Per path, not '/admin/*': uWS prefers a parameter route's `any` over a wildcard route.
  app.options('/admin/sessions', preflight(deps.allowsOrigin))
  app.options('/admin/sessions/:id', preflight(deps.allowsOrigin))
  app.any('/admin/sessions', methodNotAllowed('GET, POST, OPTIONS'))
  app.any('/admin/sessions/:id', methodNotAllowed('GET, DELETE, OPTIONS'))
}

/**
 * Wrap a handler with what every admin route does: copy what it needs from the request
 * (uWS invalidates it at the first await), CORS, the body cap, authentication, and one
 * place that turns refusals into `{"error": ...}` responses.
 */
function adminRoute (deps: AdminDeps, scope: Scope, withBody: boolean, handle: Handler) {
  return (res: HttpResponse, req: HttpRequest): void => {
    const authorization = req.getHeader('authorization')
    const cors = corsHeaders(deps.allowsOrigin, req.getHeader('origin'), req.getHeader('host')) ?? {}
    const address = clientAddress(res)
    // Checked before the token: an address past the limit costs no signature check.
    const wait = deps.authFailures.retryAfter(address)
    if (wait > 0) {
      deps.metrics.adminRefused.auth_failures++
      return sendError(res, new HttpError(429, 'too many failed authentications from this address', { 'retry-after': String(wait) }), cors)
    }
    const id = withBody ? '' : req.getParameter(0) ?? ''
    const query = req.getQuery() ?? ''
    const declaredLength = Number(req.getHeader('content-length') || 0)
    if (withBody && declaredLength > MAX_ADMIN_BODY_BYTES) {
      return sendError(res, new HttpError(413, `request body larger than ${MAX_ADMIN_BODY_BYTES} bytes`), cors)
    }
    trackAbort(res)
    const body = withBody ? readBody(res, MAX_ADMIN_BODY_BYTES) : Promise.resolve(null)
    const authorized = deps.auth === null ? Promise.resolve() : deps.auth.authorize(authorization, scope)
    Promise.all([body, authorized]).then(([bytes]) => handle(res, { id, address, query, body: bytes, cors })).catch((error: unknown) => {
      if (error instanceof HttpError) {
        if (error.status === 401) deps.authFailures.hit(address)
        return sendError(res, error, cors)
      }
      deps.logger.error({ err: error }, 'admin request failed')
      sendError(res, new HttpError(500, 'internal error'), cors)
    })
  }
}

export function preflight (allowsOrigin: OriginPolicy) {
  return (res: HttpResponse, req: HttpRequest): void => {
    const cors = corsHeaders(allowsOrigin, req.getHeader('origin'), req.getHeader('host'))
    if (cors === null) return sendError(res, new HttpError(403, 'origin not allowed'))
    send(res, 204, '', { ...preflightHeaders(cors), allow: 'GET, POST, DELETE, OPTIONS' })
  }
}

export function methodNotAllowed (allow: string) {
  return (res: HttpResponse): void => sendError(res, new HttpError(405, 'method not allowed', { allow }))
}

function notFound (): HttpError {
  return new HttpError(404, 'session not found')
}

function requireJsonObject (body: Buffer): void {
  let value: unknown
  try {
    value = JSON.parse(body.toString('utf8'))
  } catch {
    throw new HttpError(400, 'request body is not valid JSON')
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new HttpError(400, 'request body must be a JSON object')
  }
}

function creationResult ({ session, initiatorToken, responderToken }: CreatedSession, publicBaseUrl: string) {
  const url = publicBaseUrl === '' ? {} : {
    initiator_url: `${publicBaseUrl}/relay/${session.id}`,
    responder_url: `${publicBaseUrl}/relay/${session.id}`,
  }
  return {
    id: session.id,
    initiator_token: initiatorToken,
    responder_token: responderToken,
    ...url,
    created_at: iso(session.createdAt),
    expires_at: iso(session.expiresAt),
  }
}
