// The admin client against the real relay: create, pages, get, delete, typed errors; the
// discovery document's Cache-Control; and the client's copies of the relay's shapes and close
// codes, compared with the relay's own so the two cannot drift apart.
import t from 'tap'
import { RELAY_CLOSE_CODES, RelayError, adminClient, describeClose, discover } from '../../client/src/index.js'
import type { CreatedSession, Discovery, Session } from '../../client/src/index.js'
import { CLOSE_CODES } from '@session-relay/relay/data-plane/close-codes'
import type { SessionView } from '@session-relay/relay/session/session'
import { startOidcProvider } from '../fixtures/oidc-provider.js'
import { startTestRelay } from '../helpers/relay.js'

// Compile-time: the client's Session and the relay's SessionView are the same type.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false
const sessionTypesAgree: Same<Session, SessionView> = true

// Every field of each client type, so a real answer's fields can be compared with them.
const SESSION_FIELDS = {
  id: 1,
  state: 1,
  created_at: 1,
  expires_at: 1,
  last_activity: 1,
  bytes_in: 1,
  bytes_out: 1,
  initiator_connected: 1,
  responder_connected: 1,
  limits: 1,
} satisfies Record<keyof Session, 1>
const CREATED_FIELDS = {
  id: 1,
  initiator_token: 1,
  responder_token: 1,
  initiator_url: 1,
  responder_url: 1,
  created_at: 1,
  expires_at: 1,
} satisfies Record<keyof CreatedSession, 1>
const DISCOVERY_FIELDS = {
  issuer: 1,
  audience: 1,
  scopes: 1,
  authorization_endpoint: 1,
  token_endpoint: 1,
  device_authorization_endpoint: 1,
  client_id_hint: 1,
} satisfies Record<keyof Discovery, 1>
const keys = (o: object) => Object.keys(o).sort()

t.test("the client's types have the fields of the relay's answers, no more, no fewer", async (t) => {
  t.ok(sessionTypesAgree)
  const relay = await startTestRelay(t, ['--no-auth', '--log-level', 'warn', '--public-base-url', 'ws://relay.test'])
  const admin = adminClient({ server: relay.http })
  const created = await admin.createSession()
  t.same(keys(created), keys(CREATED_FIELDS))
  t.same(keys(await admin.getSession(created.id)), keys(SESSION_FIELDS))
  const idp = await startOidcProvider()
  t.teardown(() => idp.close())
  const withAuth = await startTestRelay(t, ['--oidc-issuer', idp.issuer, '--log-level', 'warn'])
  t.same(keys((await discover(withAuth.http)) ?? {}), keys(DISCOVERY_FIELDS))
})

t.test("the client's close codes are the relay's", async (t) => {
  const relays = Object.values(CLOSE_CODES)
    .map((c) => [c.code, c.name])
    .sort()
  t.same(RELAY_CLOSE_CODES.map((c) => [c.code, c.name]).sort(), relays)
  t.match(describeClose(4000), { name: 'deleted' })
  t.match(describeClose(4321), { name: 'peer' })
})

t.test('create, list page by page, get, delete; refusals are RelayErrors with status and body', async (t) => {
  const relay = await startTestRelay(t, ['--no-auth', '--log-level', 'warn'])
  const admin = adminClient({ server: relay.http })
  const ids: string[] = []
  for (let i = 0; i < 5; i++) ids.push((await admin.createSession()).id)
  const first = await admin.listSessions({ limit: 2 })
  t.equal(first.sessions.length, 2)
  t.type(first.next_cursor, 'string')
  const all: string[] = []
  for await (const s of admin.allSessions({ limit: 2 })) all.push(s.id)
  t.same(all.sort(), [...ids].sort(), 'every session exactly once across the pages')
  t.equal((await admin.getSession(ids[0] as string)).state, 'pending')
  await admin.deleteSession(ids[0] as string)
  const gone = await admin.getSession(ids[0] as string).catch((e: unknown) => e)
  t.ok(gone instanceof RelayError)
  t.match(gone, { code: 'not_found', status: 404, body: { error: String } })
  const bad = await admin.listSessions({ limit: 0 }).catch((e: unknown) => e)
  t.match(bad, { code: 'bad_request', status: 400 })
  const nowhere = await adminClient({ server: 'http://127.0.0.1:1' })
    .createSession()
    .catch((e: unknown) => e)
  t.match(nowhere, { code: 'network' })
})

t.test('discover: null with auth disabled; the document cached for its max-age', async (t) => {
  const open = await startTestRelay(t, ['--no-auth', '--log-level', 'warn'])
  t.equal(await discover(open.http), null)
  const idp = await startOidcProvider()
  t.teardown(() => idp.close())
  const relay = await startTestRelay(t, ['--oidc-issuer', idp.issuer, '--log-level', 'warn'])
  let requests = 0
  let clock = 1_000_000
  const counting: typeof fetch = (input, init) => {
    requests++
    return fetch(input, init)
  }
  const opts = { fetch: counting, now: () => clock }
  const doc = await discover(relay.ws, opts)
  t.equal(doc?.issuer, idp.issuer)
  await discover(relay.ws, opts)
  t.equal(requests, 1, 'served from the cache within max-age=300')
  clock += 301_000
  await discover(relay.ws, opts)
  t.equal(requests, 2, 'fetched again after it')
})

t.test('createSession with limits: the relay applies them and the session shows them', async (t) => {
  const relay = await startTestRelay(t, ['--no-auth', '--log-level', 'warn'])
  const admin = adminClient({ server: relay.http })
  const created = await admin.createSession({ max_bytes: 4096, bytes_per_second: 2048, ttl_seconds: 60 })
  t.same((await admin.getSession(created.id)).limits, { max_bytes: 4096, bytes_per_second: 2048, ttl_seconds: 60 })
  const refused = await admin.createSession({ ttl_seconds: 7200 }).then(
    () => null,
    (error: unknown) => error,
  )
  t.ok(refused instanceof RelayError, "a TTL above the relay's: a RelayError")
  t.match(refused, { status: 400 })
})
