// The admin API: create, list (paged), get, delete. Errors are RelayErrors with the status.
import { RelayError, httpError } from './errors.js'
import { httpBase } from './discover.js'
import type { CreatedSession, Session, SessionLimits, SessionPage } from './types.js'

export type AdminOptions = {
  /** The relay, http(s):// or ws(s)://. */
  server: string
  /**
   * The admin token (a JWT), or a function that returns a fresh one before each request
   * (login's `accessToken`). Leave it out against a relay with auth disabled.
   */
  token?: string | (() => Promise<string>)
  fetch?: typeof fetch
}

export type AdminClient = {
  /** A new session; `limits` within the relay's maxima (docs/relay.md, "Limits per session"). */
  createSession: (limits?: SessionLimits) => Promise<CreatedSession>
  /** One page: at most `limit` sessions from `cursor` on. */
  listSessions: (opts?: { limit?: number; cursor?: string }) => Promise<SessionPage>
  /** Every session, page after page. */
  allSessions: (opts?: { limit?: number }) => AsyncGenerator<Session>
  getSession: (id: string) => Promise<Session>
  deleteSession: (id: string) => Promise<void>
}

export function adminClient(opts: AdminOptions): AdminClient {
  const base = httpBase(opts.server)
  const doFetch = opts.fetch ?? fetch

  async function request(method: string, path: string, what: string, body?: object): Promise<Response> {
    const headers: Record<string, string> = { accept: 'application/json' }
    if (body !== undefined) headers['content-type'] = 'application/json'
    const token = typeof opts.token === 'function' ? await opts.token() : opts.token
    if (token !== undefined && token !== '') headers.authorization = `Bearer ${token}`
    let response: Response
    try {
      response = await doFetch(new URL(path, base), {
        method,
        headers,
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      })
    } catch (cause) {
      throw new RelayError('network', `${what}: cannot reach ${base}`, { cause })
    }
    if (!response.ok) throw httpError(what, response.status, await response.text())
    return response
  }

  const sessionPath = (id: string) => `admin/sessions/${encodeURIComponent(id)}`

  async function listSessions(o: { limit?: number; cursor?: string } = {}): Promise<SessionPage> {
    const query = new URLSearchParams()
    if (o.limit !== undefined) query.set('limit', String(o.limit))
    if (o.cursor !== undefined) query.set('cursor', o.cursor)
    const suffix = query.size > 0 ? `?${query.toString()}` : ''
    return (await (await request('GET', `admin/sessions${suffix}`, 'list sessions')).json()) as SessionPage
  }

  return {
    createSession: async (limits) =>
      (await (await request('POST', 'admin/sessions', 'create session', limits)).json()) as CreatedSession,
    listSessions,
    allSessions: async function* (o = {}) {
      let cursor: string | undefined
      do {
        const page = await listSessions({ ...o, ...(cursor === undefined ? {} : { cursor }) })
        yield* page.sessions
        cursor = page.next_cursor
      } while (cursor !== undefined)
    },
    getSession: async (id) => (await (await request('GET', sessionPath(id), `get session ${id}`)).json()) as Session,
    deleteSession: async (id) => {
      const response = await request('DELETE', sessionPath(id), `delete session ${id}`)
      await response.body?.cancel()
    },
  }
}
