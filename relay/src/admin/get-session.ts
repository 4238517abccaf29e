// GET /admin/sessions/{id}: one session's state and counters; 404 once it is deleted or expired.
import { HttpError } from '../errors.js'
import { sendJson } from '../http/responses.js'
import { viewOf } from '../session/session.js'
import type { AdminDeps, AdminHandler } from './admin-route.js'

export function getSession({ table }: AdminDeps): AdminHandler {
  return (res, { id, cors }) => {
    const session = table.find(id)
    if (session === undefined) throw new HttpError(404, 'session not found')
    sendJson(res, 200, viewOf(session), { ...cors, 'cache-control': 'no-store' })
  }
}
