// The little HTTP surface every baseline shares with the relay, so one load generator drives
// all of them: POST /admin/sessions (no auth) and GET /healthz.
import { randomBytes } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'

export type BaselineSession = { id: string; tokens: [string, string] }

export function createSessionStore() {
  const sessions = new Map<string, BaselineSession>()
  function handle(req: IncomingMessage, res: ServerResponse): void {
    if (req.method === 'POST' && req.url === '/admin/sessions') {
      const session: BaselineSession = {
        id: randomBytes(16).toString('base64url'),
        tokens: [randomBytes(16).toString('base64url'), randomBytes(16).toString('base64url')],
      }
      sessions.set(session.id, session)
      res.writeHead(201, { 'content-type': 'application/json' })
      res.end(
        JSON.stringify({ id: session.id, initiator_token: session.tokens[0], responder_token: session.tokens[1] }),
      )
      return
    }
    if (req.method === 'GET' && req.url === '/healthz') {
      res.writeHead(200, { 'content-type': 'text/plain' })
      res.end('ok')
      return
    }
    res.writeHead(404).end()
  }
  /** The session and slot (0 initiator, 1 responder) an upgrade request names, or null. */
  function slotOf(req: IncomingMessage): { session: BaselineSession; slot: 0 | 1 } | null {
    const url = new URL(req.url ?? '/', 'http://baseline')
    const id = /^\/relay\/([^/]+)$/.exec(url.pathname)?.[1]
    const session = id === undefined ? undefined : sessions.get(id)
    if (session === undefined) return null
    const token = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '')?.[1] ?? url.searchParams.get('token')
    const slot = session.tokens.indexOf(token ?? '')
    return slot === -1 ? null : { session, slot: slot as 0 | 1 }
  }
  return { handle, slotOf, forget: (id: string) => sessions.delete(id) }
}

export function announce(port: number): void {
  process.stdout.write(JSON.stringify({ listening: port }) + '\n')
}
