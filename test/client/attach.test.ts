// The library's peers against the real relay: messages both ways with text and binary kept
// apart, refusals as typed errors, the relay's close codes, and reattach after a drop.
import t from 'tap'
import { RelayError, adminClient, attach } from '../../client/src/index.js'
import type { Connection, ConnectionEvent, Message } from '../../client/src/index.js'
import { startTestRelay, until } from '../helpers/relay.js'
import { cuttableProxy } from '../helpers/tcp-proxy.js'
import type { TestRelay } from '../helpers/relay.js'

async function session(relay: TestRelay) {
  const created = await adminClient({ server: relay.http }).createSession()
  return { ...created, url: `${relay.ws}/relay/${created.id}` }
}

async function next(connection: Connection): Promise<Message> {
  const result = await connection[Symbol.asyncIterator]().next()
  if (result.done === true) throw new Error('connection ended')
  return result.value
}

async function failure(promise: Promise<unknown>): Promise<RelayError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  )
  if (!(error instanceof RelayError)) throw new Error(`expected a RelayError, got ${String(error)}`)
  return error
}

t.test('two peers exchange text and binary messages, kept apart, in order', async (t) => {
  const relay = await startTestRelay(t, ['--no-auth', '--log-level', 'warn'])
  const s = await session(relay)
  const a = await attach(s.url, s.initiator_token)
  const b = await attach(s.url, s.responder_token)
  await a.send('hello')
  await a.send(new Uint8Array([0, 1, 2, 255]))
  await b.send('back')
  t.same(await next(b), { type: 'text', data: 'hello' })
  const binary = await next(b)
  t.equal(binary.type, 'binary')
  t.same([...(binary.data as Uint8Array)], [0, 1, 2, 255])
  t.same(await next(a), { type: 'text', data: 'back' })
  const closed = await a.close(1000, 'bye')
  t.match(closed, { code: 1000, byUs: true })
  t.match(await b.closed, { code: 1000, reason: 'bye', name: 'normal', byUs: false })
  // the iterator ends after a normal close
  t.same(await b[Symbol.asyncIterator]().next(), { done: true, value: undefined })
  t.equal((await failure(b.send('late'))).code, 'closed')
})

t.test('a wrong slot token is unauthorized (401); a second attach to a slot is a conflict (409)', async (t) => {
  const relay = await startTestRelay(t, ['--no-auth', '--log-level', 'warn'])
  const s = await session(relay)
  t.match(await failure(attach(s.url, 'not-a-token')), { code: 'unauthorized', status: 401, body: { error: String } })
  const first = await attach(s.url, s.initiator_token)
  t.teardown(() => first.close())
  t.match(await failure(attach(s.url, s.initiator_token)), { code: 'conflict', status: 409 })
})

t.test('a deleted session: peers see 4000 "deleted", the admin API not_found (404)', async (t) => {
  const relay = await startTestRelay(t, ['--no-auth', '--log-level', 'warn'])
  const admin = adminClient({ server: relay.http })
  const s = await session(relay)
  const a = await attach(s.url, s.initiator_token)
  await admin.deleteSession(s.id)
  const error = await failure(next(a))
  t.equal(error.code, 'closed')
  t.match(error.body, { code: 4000, name: 'deleted', reason: 'session deleted' })
  t.match(await a.closed, { code: 4000, name: 'deleted' })
  t.match(await failure(admin.getSession(s.id)), { code: 'not_found', status: 404, body: { error: String } })
  t.match(await failure(admin.deleteSession(s.id)), { code: 'not_found', status: 404 })
  t.match(await failure(attach(s.url, s.responder_token)), { code: 'not_found', status: 404 })
})

t.test('an expired session: peers see 4001 "expired"', async (t) => {
  const relay = await startTestRelay(t, ['--no-auth', '--log-level', 'warn', '--session-ttl', '300ms'])
  const s = await session(relay)
  const a = await attach(s.url, s.initiator_token)
  t.match(await a.closed, { code: 4001, name: 'expired', meaning: /expires_at/ })
  t.match(await failure(adminClient({ server: relay.http }).getSession(s.id)), { code: 'not_found', status: 404 })
})

t.test('a dropped connection reattaches within the peer-wait window; messages sent meanwhile arrive', async (t) => {
  const relay = await startTestRelay(t, ['--no-auth', '--log-level', 'warn'])
  const s = await session(relay)
  const proxy = await cuttableProxy(t, relay.port)
  const events: ConnectionEvent[] = []
  const a = await attach(`ws://127.0.0.1:${proxy.port}/relay/${s.id}`, s.initiator_token, {
    onEvent: (e) => events.push(e),
  })
  const b = await attach(s.url, s.responder_token)
  await b.send('before')
  t.same(await next(a), { type: 'text', data: 'before' })
  proxy.cut()
  await until(() => events.some((e) => e.type === 'drop'), 5000, 'the drop')
  // the relay holds what b sends while a is away, and delivers it on reattach
  await b.send('during')
  await until(() => events.some((e) => e.type === 'reattached'), 10_000, 'the reattach')
  t.same(await next(a), { type: 'text', data: 'during' })
  await a.send('after')
  t.same(await next(b), { type: 'text', data: 'after' })
  await a.close()
})

t.test('no reattach once the window has passed: closed with the drop', async (t) => {
  const relay = await startTestRelay(t, ['--no-auth', '--log-level', 'warn'])
  const s = await session(relay)
  const proxy = await cuttableProxy(t, relay.port)
  const a = await attach(`ws://127.0.0.1:${proxy.port}/relay/${s.id}`, s.initiator_token, { reattachWindowMs: 0 })
  proxy.cut()
  t.match(await a.closed, { code: 1006, name: 'abnormal' })
})

t.test('a session deleted while a peer is away: the reattach gets 404 and the connection ends', async (t) => {
  const relay = await startTestRelay(t, ['--no-auth', '--log-level', 'warn'])
  const s = await session(relay)
  const proxy = await cuttableProxy(t, relay.port)
  const events: ConnectionEvent[] = []
  const a = await attach(`ws://127.0.0.1:${proxy.port}/relay/${s.id}`, s.initiator_token, {
    onEvent: (e) => events.push(e),
  })
  proxy.cut()
  await until(() => events.some((e) => e.type === 'drop'), 5000, 'the drop')
  await adminClient({ server: relay.http }).deleteSession(s.id)
  t.match(await a.closed, { code: 1006, reason: /404/ })
  t.equal((await failure(a.send('x'))).code, 'closed')
})

t.test('a relay out of reach for the whole window: closed with the drop once the window has passed', async (t) => {
  const relay = await startTestRelay(t, ['--no-auth', '--log-level', 'warn'])
  const s = await session(relay)
  const proxy = await cuttableProxy(t, relay.port)
  const a = await attach(`ws://127.0.0.1:${proxy.port}/relay/${s.id}`, s.initiator_token, { reattachWindowMs: 400 })
  proxy.stop()
  t.match(await a.closed, { code: 1006, name: 'abnormal', reason: /within the peer-wait window/ })
  t.match(await failure(next(a)), { code: 'closed' })
})

t.test('1001 with a way to create sessions: both peers go on in the new session, in order', async (t) => {
  const stopping = await startTestRelay(t, ['--no-auth', '--log-level', 'warn'])
  const other = await startTestRelay(t, ['--no-auth', '--log-level', 'warn'])
  const s = await session(stopping)
  // One new session for both, as the two callbacks would agree on it.
  const moved = session(other)
  const events: ConnectionEvent[] = []
  const a = await attach(s.url, s.initiator_token, {
    recreate: async () => {
      const n = await moved
      return { url: n.url, token: n.initiator_token }
    },
    onEvent: (e) => events.push(e),
  })
  const bEvents: ConnectionEvent[] = []
  const b = await attach(s.url, s.responder_token, {
    recreate: async () => {
      const n = await moved
      return { url: n.url, token: n.responder_token }
    },
    onEvent: (e) => bEvents.push(e),
  })
  await stopping.shutdown() // 1001 to both peers, what a drain does at its timeout
  // Not before: what is sent to a connection the relay is closing is lost, as with a drop.
  await until(
    () => [events, bEvents].every((list) => list.some((e) => e.type === 'reattached')),
    60_000,
    'both peers in the new session',
  )
  await a.send('on the new relay')
  t.same(await next(b), { type: 'text', data: 'on the new relay' }, 'delivered through the new session')
  t.same(
    events.map((e) => e.type),
    ['recreate', 'reattached'],
    'events: recreate, then reattached',
  )
  await a.close()
})

t.test('1001 when the way to create sessions fails, or without one: the connection ends with 1001', async (t) => {
  const relay = await startTestRelay(t, ['--no-auth', '--log-level', 'warn'])
  const s = await session(relay)
  const a = await attach(s.url, s.initiator_token, {
    recreate: async () => {
      throw new Error('no relay left')
    },
  })
  const b = await attach(s.url, s.responder_token)
  await relay.shutdown()
  t.match(await a.closed, { code: 1001, name: 'shutdown', reason: /could not create the session again: no relay left/ })
  t.match(await b.closed, { code: 1001, name: 'shutdown' })
})
