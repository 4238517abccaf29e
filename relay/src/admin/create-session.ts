// POST /admin/sessions: a new session and its two slot tokens, shown this once.
import { HttpError } from '../errors.js'
import { DRAINING_RETRY_AFTER_SECONDS } from '../http/readiness.js'
import { sendJson } from '../http/responses.js'
import { requestTraceOf } from '../http/traced.js'
import { iso } from '../session/session.js'
import type { CreatedSession } from '../session/table.js'
import type { AdminDeps, AdminHandler } from './admin-route.js'
import { limitsOf } from './session-limits.js'

export function createSession(deps: AdminDeps): AdminHandler {
  const { table } = deps
  return (res, { address, caller, body, cors }) => {
    const limits = limitsOf(body, deps.limits)
    // A draining relay is on its way out: the client should create on another one.
    if (deps.readiness.draining) {
      deps.metrics.adminRefused.draining++
      throw new HttpError(503, 'relay draining: create the session on another relay', {
        'retry-after': String(DRAINING_RETRY_AFTER_SECONDS),
      })
    }
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
    // One caller must not hold every slot of the node: behind an ingress the address limits
    // above see one address for every caller, a token's subject does not.
    if (deps.maxSessionsPerCaller !== null && table.heldBy(caller) >= deps.maxSessionsPerCaller) {
      deps.metrics.adminRefused.caller_sessions++
      throw new HttpError(429, 'too many sessions held by this caller', {
        'retry-after': String(deps.fullRetryAfterSeconds),
      })
    }
    const created = table.create(caller, limits, requestTraceOf(res))
    sendJson(res, 201, creationResult(created, deps.publicBaseUrl), {
      ...cors,
      'cache-control': 'no-store',
      location: `/admin/sessions/${created.session.id}`,
    })
  }
}

function creationResult({ session, initiatorToken, responderToken }: CreatedSession, publicBaseUrl: string) {
  const url =
    publicBaseUrl === ''
      ? {}
      : {
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
