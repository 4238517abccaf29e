// Admission limits: per client address on refused attaches, admin 401s and creations (429 with
// Retry-After), and a cap on sessions (503). Linux routes all of 127.0.0.0/8 to loopback, so
// binding a client to 127.0.0.2 gives it another address against the same relay.
import { request } from 'node:http'
import type { IncomingHttpHeaders } from 'node:http'
import t from 'tap'
import { addressKey, createAddressLimiter } from '@session-relay/relay/http/admission'
import { startOidcProvider } from '../fixtures/oidc-provider.js'
import { attach, createSession, pair, startTestRelay, until } from '../helpers/relay.js'
import type { TestRelay } from '../helpers/relay.js'

type Answer = { status: number; headers: IncomingHttpHeaders; body: unknown }

const OTHER_ADDRESS = '127.0.0.2'

t.test('the limiter: a token bucket per address, Retry-After until one token is back', async (t) => {
  let now = 1_000_000
  const limiter = createAddressLimiter({ count: 3, windowMs: 60_000 }, 1000, () => now)
  for (let i = 0; i < 3; i++) {
    t.equal(limiter.retryAfter('a'), 0, `event ${i + 1} of 3 may go ahead`)
    limiter.hit('a')
  }
  t.equal(limiter.retryAfter('a'), 20, 'one token back after a third of the window')
  t.equal(limiter.retryAfter('b'), 0, 'other addresses are not affected')
  now += 19_001
  t.equal(limiter.retryAfter('a'), 1)
  now += 1_000
  t.equal(limiter.retryAfter('a'), 0, "refilled at the window's rate")
  t.equal(limiter.take('a'), 0, 'take counts when it goes ahead')
  t.equal(limiter.take('a'), 20, 'and refuses without counting when it cannot')
  now += 20_000
  t.equal(limiter.take('a'), 0)
})

t.test("the limiter's table is bounded: a flood of distinct addresses, refilled buckets dropped", async (t) => {
  let now = 0
  const limiter = createAddressLimiter({ count: 5, windowMs: 1_000 }, 1000, () => now)
  for (let i = 0; i < 100_000; i++) limiter.hit(`10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`)
  t.equal(limiter.size(), 1000, '100,000 addresses, at most 1,000 kept')
  limiter.hit('victim')
  limiter.hit('victim')
  now += 10_000 // every bucket has refilled: passing them drops them
  for (let i = 0; i < 600; i++) limiter.hit(`fresh-${i}`)
  t.ok(limiter.size() <= 601, `stale entries are dropped as new ones arrive (${limiter.size()})`)
  t.equal(limiter.retryAfter('victim'), 0, 'a forgotten address starts with a full bucket')
})

t.test('client address keys: IPv4-mapped as IPv4, IPv6 by its /64', async (t) => {
  t.equal(addressKey('127.0.0.1'), '127.0.0.1')
  t.equal(
    addressKey('0000:0000:0000:0000:0000:ffff:7f00:0001'),
    '127.0.0.1',
    'as uWS writes an IPv4 client of a dual-stack listener',
  )
  t.equal(addressKey('0000:0000:0000:0000:0000:ffff:c000:0207'), '192.0.2.7')
  t.equal(addressKey('::ffff:192.0.2.7'), '192.0.2.7')
  t.equal(addressKey('::ffff:c000:207'), '192.0.2.7')
  t.equal(addressKey('2001:db8::1'), '2001:db8:0:0::/64')
  t.equal(addressKey('2001:0db8:0000:0000:ffff:0000:0000:0002'), '2001:db8:0:0::/64', 'same /64, same key')
  t.equal(addressKey('2001:0db8:0000:0001:0000:0000:0000:0001'), '2001:db8:0:1::/64', 'another /64')
  t.equal(addressKey('0000:0000:0000:0000:0000:0000:0000:0001'), '0:0:0:0::/64', '::1 as uWS writes it')
  t.equal(addressKey('64:ff9b::192.0.2.7'), '64:ff9b:0:0::/64', 'a NAT64 address is IPv6')
})

t.test(
  'refused attaches: past the limit every attach from that address answers 429, others are unaffected',
  async (t) => {
    const relay = await startTestRelay(t, ['--no-auth', '--attach-failure-limit', '3/3s'])
    const session = await createSession(relay)
    const path = `/relay/${session.id}`
    t.equal((await upgrade(relay, path, 'A'.repeat(22))).status, 401)
    t.equal((await upgrade(relay, '/relay/no-such-session', session.initiator_token)).status, 404)
    t.equal((await upgrade(relay, path, '')).status, 401)
    const limited = await upgrade(relay, path, session.initiator_token)
    t.equal(limited.status, 429, 'even the right token, once past the limit')
    t.same(limited.body, { error: 'too many refused attaches from this address' })
    t.equal(limited.headers['content-type'], 'application/json')
    t.equal(limited.headers['retry-after'], '1', 'Retry-After in whole seconds: one token is back in 1 s')
    t.equal(
      (await upgrade(relay, path, session.initiator_token, OTHER_ADDRESS)).status,
      101,
      'another address attaches',
    )

    await until(
      async () => (await upgrade(relay, path, session.responder_token)).status === 101,
      3_000,
      'the bucket to refill',
    )
    t.pass('the address may attach again once its bucket refills')
    const metrics = await (await fetch(`${relay.http}/metrics`)).text()
    t.match(metrics, /relay_attach_refused_total\{reason="rate_limited"\} [1-9]/)
  },
)

t.test('a 409 is not a failure: it takes the right token, and a reconnecting peer retries on it', async (t) => {
  const relay = await startTestRelay(t, ['--no-auth', '--attach-failure-limit', '3/1m'])
  const { session } = await pair(relay)
  const statuses = new Set<number>()
  for (let i = 0; i < 10; i++)
    statuses.add((await upgrade(relay, `/relay/${session.id}`, session.initiator_token)).status)
  t.same([...statuses], [409], 'ten attaches to a taken slot: 409 each time, never 429')
  t.equal((await upgrade(relay, '/relay/none', 'A'.repeat(22))).status, 404, 'and the address is not limited')
})

t.test('on a dual-stack listener (the default :8080 form), IPv4 clients are told apart', async (t) => {
  // All interfaces, as in production; an unreachable issuer keeps the admin API shut meanwhile.
  const relay = await startTestRelay(t, [
    '--addr',
    ':0',
    '--oidc-issuer',
    'http://127.0.0.1:9',
    '--attach-failure-limit',
    '3/1m',
  ])
  for (let i = 0; i < 3; i++) t.equal((await upgrade(relay, '/relay/none', 'A'.repeat(22))).status, 404)
  t.equal((await upgrade(relay, '/relay/none', 'A'.repeat(22))).status, 429, '127.0.0.1 is past its limit')
  t.equal((await upgrade(relay, '/relay/none', 'A'.repeat(22), OTHER_ADDRESS)).status, 404, `${OTHER_ADDRESS} is not`)
})

t.test('--attach-failure-limit off: refusals keep their own status', async (t) => {
  const relay = await startTestRelay(t, ['--no-auth', '--attach-failure-limit', 'off'])
  const session = await createSession(relay)
  const statuses = new Set<number>()
  for (let i = 0; i < 60; i++) statuses.add((await upgrade(relay, `/relay/${session.id}`, 'B'.repeat(22))).status)
  t.same([...statuses], [401], '60 refusals, no 429')
  t.equal((await upgrade(relay, `/relay/${session.id}`, session.initiator_token)).status, 101)
})

t.test('admin 401s: past the limit the address gets 429, even with a good token; others are unaffected', async (t) => {
  const oidc = await startOidcProvider()
  t.teardown(() => oidc.close())
  const relay = await startTestRelay(t, [
    '--oidc-issuer',
    oidc.issuer,
    '--oidc-audience',
    'https://relay.test',
    '--admin-auth-failure-limit',
    '3/1m',
    '--allowed-origins',
    'app.example.com',
  ])
  const good = await oidc.token()
  t.equal((await call(relay, 'POST', '/admin/sessions', `Bearer ${good}`)).status, 201, 'a good token is not a failure')
  for (const bad of [undefined, 'Bearer nope', `Bearer ${good.slice(0, -4)}AAAA`]) {
    t.equal((await call(relay, 'GET', '/admin/sessions', bad)).status, 401)
  }
  const limited = await call(relay, 'POST', '/admin/sessions', `Bearer ${good}`, { origin: 'https://app.example.com' })
  t.equal(limited.status, 429, 'even a good token, once past the limit')
  t.same(limited.body, { error: 'too many failed authentications from this address' })
  t.equal(limited.headers['retry-after'], '20')
  t.equal(
    limited.headers['access-control-allow-origin'],
    'https://app.example.com',
    'CORS headers, so a browser can read Retry-After',
  )
  t.equal(
    (await call(relay, 'GET', '/admin/sessions', `Bearer ${good}`, {}, OTHER_ADDRESS)).status,
    200,
    'another address is served',
  )
  t.equal((await call(relay, 'GET', '/healthz')).status, 200, 'public routes are not admin routes')
  t.match(await (await fetch(`${relay.http}/metrics`)).text(), /relay_admin_refused_total\{reason="auth_failures"\} 1/)
})

t.test('session creation per address: 429 past the limit, other addresses unaffected, off lifts it', async (t) => {
  const relay = await startTestRelay(t, ['--no-auth', '--session-create-limit', '3/1m'])
  for (let i = 0; i < 3; i++) t.equal((await call(relay, 'POST', '/admin/sessions')).status, 201)
  const limited = await call(relay, 'POST', '/admin/sessions')
  t.equal(limited.status, 429)
  t.same(limited.body, { error: 'too many sessions created from this address' })
  t.equal(limited.headers['retry-after'], '20')
  t.equal(
    (await call(relay, 'POST', '/admin/sessions', undefined, {}, OTHER_ADDRESS)).status,
    201,
    'another address creates',
  )
  const list = await call(relay, 'GET', '/admin/sessions')
  t.equal((list.body as { sessions: unknown[] }).sessions.length, 4, 'the refused one created nothing')

  const off = await startTestRelay(t, ['--no-auth', '--session-create-limit', 'off'])
  const statuses = await Promise.all(
    Array.from({ length: 100 }, async () => (await call(off, 'POST', '/admin/sessions')).status),
  )
  t.same(new Set(statuses), new Set([201]), 'off: 100 at once, all created')
})

t.test('the session cap: creation answers 503 when full, live sessions are neither evicted nor starved', async (t) => {
  const relay = await startTestRelay(t, ['--no-auth', '--max-sessions', '3', '--reap-interval', '2s'])
  const sessions = [await createSession(relay), await createSession(relay), await createSession(relay)]
  const full = await call(relay, 'POST', '/admin/sessions')
  t.equal(full.status, 503)
  t.same(full.body, { error: 'session limit reached' })
  t.equal(full.headers['retry-after'], '2', 'the next sweep may free room')
  for (let i = 0; i < 20; i++) t.equal((await call(relay, 'POST', '/admin/sessions')).status, 503)

  const [first] = sessions as [(typeof sessions)[number]]
  const url = `${relay.ws}/relay/${first.id}`
  const initiator = await attach(url, { token: first.initiator_token })
  const responder = await attach(url, { token: first.responder_token })
  initiator.socket.send('still served')
  t.equal((await responder.receive(1))[0]!.data.toString(), 'still served', 'existing sessions keep working')
  for (const s of sessions)
    t.equal((await call(relay, 'GET', `/admin/sessions/${s.id}`)).status, 200, 'none was evicted')

  t.equal((await call(relay, 'DELETE', `/admin/sessions/${sessions[1]!.id}`)).status, 204)
  t.equal((await call(relay, 'POST', '/admin/sessions')).status, 201, 'room again after a delete')
  t.match(await (await fetch(`${relay.http}/metrics`)).text(), /relay_admin_refused_total\{reason="sessions_full"\} 21/)
})

/** An HTTP request from a chosen local address, answered in JSON. */
function call(
  relay: TestRelay,
  method: string,
  path: string,
  authorization?: string,
  headers: Record<string, string> = {},
  localAddress = '127.0.0.1',
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${relay.http}${path}`,
      {
        method,
        localAddress,
        headers: { ...headers, ...(authorization === undefined ? {} : { authorization }) },
      },
      (res) => {
        let text = ''
        res.on('data', (chunk) => {
          text += chunk
        })
        res.on('end', () => {
          let body: unknown = text
          try {
            body = JSON.parse(text)
          } catch {}
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body })
        })
      },
    )
    req.on('error', reject)
    req.end()
  })
}

/** A WebSocket upgrade from a chosen local address: 101, or the refusal. */
function upgrade(relay: TestRelay, path: string, token: string, localAddress = '127.0.0.1'): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(`${relay.http}${path}`, {
      localAddress,
      headers: {
        connection: 'Upgrade',
        upgrade: 'websocket',
        'sec-websocket-version': '13',
        'sec-websocket-key': Buffer.from('0123456789abcdef').toString('base64'),
        ...(token === '' ? {} : { authorization: `Bearer ${token}` }),
      },
    })
    req.on('upgrade', (res, socket) => {
      socket.destroy()
      resolve({ status: res.statusCode ?? 0, headers: res.headers, body: null })
    })
    req.on('response', (res) => {
      let text = ''
      res.on('data', (chunk) => {
        text += chunk
      })
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: JSON.parse(text) }))
    })
    req.on('error', reject)
    req.end()
  })
}
