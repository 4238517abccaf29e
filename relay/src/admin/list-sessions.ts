// GET /admin/sessions: the live sessions, a page at a time (session/session-pages.ts).
import { sendJson } from '../http/responses.js'
import { pageOf, parsePageQuery } from '../session/session-pages.js'
import { viewOf } from '../session/session.js'
import type { AdminDeps, AdminHandler } from './admin-route.js'

export function listSessions({ table }: AdminDeps): AdminHandler {
  return (res, { query, cors }) => {
    const page = pageOf(table.entries(), parsePageQuery(query), Date.now())
    const next = page.nextCursor === null ? {} : { next_cursor: page.nextCursor }
    sendJson(res, 200, { sessions: page.sessions.map(viewOf), ...next }, { ...cors, 'cache-control': 'no-store' })
  }
}
