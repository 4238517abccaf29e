// DELETE /admin/sessions/{id}: the session closes for both peers and is gone at once.
import { CLOSE_CODES } from '../data-plane/close-codes.js'
import { HttpError } from '../errors.js'
import { send } from '../http/responses.js'
import type { AdminDeps, AdminHandler } from './admin-route.js'

export function deleteSession({ table }: AdminDeps): AdminHandler {
  return (res, { id, cors }) => {
    const session = table.find(id)
    if (session === undefined) throw new HttpError(404, 'session not found')
    table.close(session, { reason: 'deleted', frame: CLOSE_CODES.deleted, remove: true })
    send(res, 204, '', cors)
  }
}
