// The admin API (relay.md, "Admin API"): each route's scope and handler.
import { preflight } from '../http/cors.js'
import { methodNotAllowed } from '../http/responses.js'
import { traced } from '../http/traced.js'
import type { Routes } from '../http/request-guard.js'
import type { AdminDeps } from './admin-route.js'
import { adminRoute } from './admin-route.js'
import { createSession } from './create-session.js'
import { deleteSession } from './delete-session.js'
import { getSession } from './get-session.js'
import { listSessions } from './list-sessions.js'

export type { AdminDeps }

const SESSIONS = '/admin/sessions'
// The spec's spelling of the path template: what a span names as its route.
const SESSION = '/admin/sessions/{id}'

export function registerAdminRoutes(app: Routes, deps: AdminDeps): void {
  const { tracing } = deps
  app.post(SESSIONS, traced(tracing, SESSIONS, adminRoute(deps, 'relay:session:create', true, createSession(deps))))
  app.get(SESSIONS, traced(tracing, SESSIONS, adminRoute(deps, 'relay:session:read', false, listSessions(deps))))
  app.get(
    '/admin/sessions/:id',
    traced(tracing, SESSION, adminRoute(deps, 'relay:session:read', false, getSession(deps))),
  )
  app.del(
    '/admin/sessions/:id',
    traced(tracing, SESSION, adminRoute(deps, 'relay:session:delete', false, deleteSession(deps))),
  )

  // Per path, not '/admin/*': uWS prefers a parameter route's `any` over a wildcard route.
  app.options(SESSIONS, traced(tracing, SESSIONS, preflight(deps.allowsOrigin)))
  app.options('/admin/sessions/:id', traced(tracing, SESSION, preflight(deps.allowsOrigin)))
  app.any(SESSIONS, traced(tracing, SESSIONS, methodNotAllowed('GET, POST, OPTIONS')))
  app.any('/admin/sessions/:id', traced(tracing, SESSION, methodNotAllowed('GET, DELETE, OPTIONS')))
}
