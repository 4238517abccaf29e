// The admin API (relay.md, "Admin API"): each route's scope and handler.
import { preflight } from '../http/cors.js'
import { methodNotAllowed } from '../http/responses.js'
import type { Routes } from '../http/request-guard.js'
import type { AdminDeps } from './admin-route.js'
import { adminRoute } from './admin-route.js'
import { createSession } from './create-session.js'
import { deleteSession } from './delete-session.js'
import { getSession } from './get-session.js'
import { listSessions } from './list-sessions.js'

export type { AdminDeps }

export function registerAdminRoutes(app: Routes, deps: AdminDeps): void {
  app.post('/admin/sessions', adminRoute(deps, 'relay:session:create', true, createSession(deps)))
  app.get('/admin/sessions', adminRoute(deps, 'relay:session:read', false, listSessions(deps)))
  app.get('/admin/sessions/:id', adminRoute(deps, 'relay:session:read', false, getSession(deps)))
  app.del('/admin/sessions/:id', adminRoute(deps, 'relay:session:delete', false, deleteSession(deps)))

  // Per path, not '/admin/*': uWS prefers a parameter route's `any` over a wildcard route.
  app.options('/admin/sessions', preflight(deps.allowsOrigin))
  app.options('/admin/sessions/:id', preflight(deps.allowsOrigin))
  app.any('/admin/sessions', methodNotAllowed('GET, POST, OPTIONS'))
  app.any('/admin/sessions/:id', methodNotAllowed('GET, DELETE, OPTIONS'))
}
