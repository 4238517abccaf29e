import { connect } from 'node:net'
import t from 'tap'
import { attach, createSession, getSession, pair, startTestRelay } from '../helpers/relay.js'

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/
const BASE64URL_16 = /^[A-Za-z0-9_-]{22}$/

t.test('create answers 201 with the creation result and no URLs without a public base URL', async (t) => {
  const relay = await startTestRelay(t, ['--no-auth', '--session-ttl', '90m'])
  const response = await fetch(`${relay.http}/admin/sessions`, { method: 'POST' })
  t.equal(response.status, 201)
  t.match(response.headers.get('content-type'), /^application\/json/)
  t.equal(response.headers.get('cache-control'), 'no-store')
  const body = (await response.json()) as Record<string, string>
  t.same(Object.keys(body).sort(), ['created_at', 'expires_at', 'id', 'initiator_token', 'responder_token'])
  t.match(body.id, /^[A-Za-z0-9_-]{16,}$/, 'id has at least 96 random bits, base64url')
  t.match(body.initiator_token, BASE64URL_16)
  t.match(body.responder_token, BASE64URL_16)
  t.not(body.initiator_token, body.responder_token)
  t.match(body.created_at, ISO)
  t.equal(Date.parse(body.expires_at!) - Date.parse(body.created_at!), 90 * 60_000, 'expires after the session TTL')
  t.equal(response.headers.get('location'), `/admin/sessions/${body.id}`)

  const withBody = await fetch(`${relay.http}/admin/sessions`, {
    method: 'POST',
    body: '{}',
    headers: { 'content-type': 'application/json' },
  })
  t.equal(withBody.status, 201, 'an empty JSON object is accepted too')
})

t.test('create fills the URLs from the public base URL', async (t) => {
  const relay = await startTestRelay(t, ['--no-auth', '--public-base-url', 'wss://relay.example.com/'])
  const body = await createSession(relay)
  t.equal(body.initiator_url, `wss://relay.example.com/relay/${body.id}`)
  t.equal(body.responder_url, `wss://relay.example.com/relay/${body.id}`)
})

t.test('list and get show the admin view and never a token', async (t) => {
  const relay = await startTestRelay(t)
  const a = await createSession(relay)
  const b = await createSession(relay)
  const list = await fetch(`${relay.http}/admin/sessions`)
  t.equal(list.status, 200)
  t.match(list.headers.get('content-type'), /^application\/json/)
  const text = await list.text()
  const { sessions } = JSON.parse(text) as { sessions: Array<Record<string, unknown>> }
  t.same(sessions.map((s) => s.id).sort(), [a.id, b.id].sort())
  for (const s of sessions) {
    t.same(Object.keys(s).sort(), [
      'bytes_in',
      'bytes_out',
      'created_at',
      'expires_at',
      'id',
      'initiator_connected',
      'last_activity',
      'limits',
      'responder_connected',
      'state',
    ])
    t.equal(s.state, 'pending')
    t.equal(s.bytes_in, 0)
    t.equal(s.initiator_connected, false)
  }
  const one = await getSession(relay, a.id)
  t.equal(one.status, 200)
  t.equal(one.body.id, a.id)
  for (const token of [a.initiator_token, a.responder_token, b.initiator_token, b.responder_token]) {
    t.notOk(text.includes(token), 'list never shows a token')
    t.notOk(JSON.stringify(one.body).includes(token), 'get never shows a token')
  }
})

t.test('no log line carries a token', async (t) => {
  const relay = await startTestRelay(t)
  const { session, initiator, responder } = await pair(relay)
  initiator.socket.send('hello')
  await responder.receive(1)
  await refusalIgnored(attach(`${relay.ws}/relay/${session.id}?token=${session.initiator_token}`))
  initiator.socket.close(1000)
  await responder.closed
  const logs = relay.logText()
  t.match(logs, /session created/)
  t.match(logs, /peer attached/)
  t.match(logs, /session closed/)
  t.ok(
    relay.logs.every((line) => line.session === undefined || typeof line.session === 'string'),
    'lifecycle lines carry the session id',
  )
  t.notOk(logs.includes(session.initiator_token), 'initiator token never logged')
  t.notOk(logs.includes(session.responder_token), 'responder token never logged')
})

t.test('get and delete of unknown ids answer 404 with a JSON error', async (t) => {
  const relay = await startTestRelay(t)
  for (const id of ['nope', 'x'.repeat(2000), '%00', 'a%2Fb']) {
    const got = await fetch(`${relay.http}/admin/sessions/${id}`)
    t.equal(got.status, 404, `GET ${id.slice(0, 10)}`)
    t.same(await got.json(), { error: 'session not found' })
    const deleted = await fetch(`${relay.http}/admin/sessions/${id}`, { method: 'DELETE' })
    t.equal(deleted.status, 404, `DELETE ${id.slice(0, 10)}`)
    t.same(await deleted.json(), { error: 'session not found' })
  }
  const session = await createSession(relay)
  t.equal((await fetch(`${relay.http}/admin/sessions/${session.id}`, { method: 'DELETE' })).status, 204)
  const twice = await fetch(`${relay.http}/admin/sessions/${session.id}`, { method: 'DELETE' })
  t.equal(twice.status, 404, 'a second delete finds nothing')
})

t.test('unknown paths answer 404 and wrong methods 405 with Allow, all in JSON', async (t) => {
  const relay = await startTestRelay(t)
  for (const path of ['/', '/admin', '/admin/session', '/relay', '/metricsz', '/' + 'a'.repeat(3000)]) {
    const response = await fetch(`${relay.http}${path}`)
    t.equal(response.status, 404, path.slice(0, 20))
    t.same(await response.json(), { error: 'not found' })
  }
  for (const [method, path, allow] of [
    ['PUT', '/admin/sessions', 'GET, POST, OPTIONS'],
    ['PATCH', '/admin/sessions', 'GET, POST, OPTIONS'],
    ['DELETE', '/admin/sessions', 'GET, POST, OPTIONS'],
    ['POST', '/admin/sessions/abc', 'GET, DELETE, OPTIONS'],
    ['PUT', '/admin/sessions/abc', 'GET, DELETE, OPTIONS'],
    ['POST', '/healthz', 'GET'],
    ['DELETE', '/metrics', 'GET'],
    ['POST', '/.well-known/relay-config', 'GET'],
  ]) {
    const response = await fetch(`${relay.http}${path}`, { method })
    t.equal(response.status, 405, `${method} ${path}`)
    t.equal(response.headers.get('allow'), allow)
    t.same(await response.json(), { error: 'method not allowed' })
  }
})

t.test('bad bodies on create: 400 for non-JSON or non-objects, 413 past the cap; nothing is created', async (t) => {
  const relay = await startTestRelay(t)
  for (const body of ['{', 'null', '[]', '"text"', '42', '\u0000\u0001', '{"a":']) {
    const response = await fetch(`${relay.http}/admin/sessions`, {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/json' },
    })
    t.equal(response.status, 400, JSON.stringify(body))
    t.match(await response.json(), { error: /JSON/ })
  }
  const big = await fetch(`${relay.http}/admin/sessions`, {
    method: 'POST',
    body: JSON.stringify({ pad: 'x'.repeat(64 * 1024) }),
  })
  t.equal(big.status, 413)
  t.match(await big.json(), { error: /larger than/ })
  const streamed = await postChunked(relay.port, 'x'.repeat(40 * 1024))
  t.equal(streamed.status, 413, 'a chunked body past the cap is refused while it streams')
  const list = (await (await fetch(`${relay.http}/admin/sessions`)).json()) as { sessions: unknown[] }
  t.same(list.sessions, [], 'no refused request created a session')
  t.equal((await fetch(`${relay.http}/healthz`)).status, 200, 'still serving')
})

t.test('healthz and metrics', async (t) => {
  const relay = await startTestRelay(t)
  const health = await fetch(`${relay.http}/healthz`)
  t.equal(health.status, 200)
  t.equal(await health.text(), 'ok')
  const { initiator, responder } = await pair(relay)
  await createSession(relay)
  initiator.socket.send('12345')
  await responder.receive(1)
  const response = await fetch(`${relay.http}/metrics`)
  t.match(response.headers.get('content-type'), /^text\/plain; version=0\.0\.4/)
  const text = await response.text()
  t.match(text, /relay_sessions\{state="open"\} 1/)
  t.match(text, /relay_sessions\{state="pending"\} 1/)
  t.match(text, /relay_sessions_created_total 2/)
  t.match(text, /relay_messages_forwarded_total 1/)
  t.match(text, /relay_bytes_forwarded_total 5/)
  t.match(text, /relay_connections 2/)
  t.match(text, /relay_outgoing_backlog_bytes \d+/)
  t.match(text, /# TYPE relay_sessions_closed_total counter/)
})

t.test('CORS follows the allowed-origins patterns on /admin/* and /.well-known/*', async (t) => {
  const relay = await startTestRelay(t, ['--no-auth', '--allowed-origins', 'app.example.com,*.example.org'])
  const preflight = await fetch(`${relay.http}/admin/sessions`, {
    method: 'OPTIONS',
    headers: {
      origin: 'https://app.example.com',
      'access-control-request-method': 'POST',
      'access-control-request-headers': 'authorization',
    },
  })
  t.equal(preflight.status, 204)
  t.equal(preflight.headers.get('access-control-allow-origin'), 'https://app.example.com')
  t.match(preflight.headers.get('access-control-allow-methods'), /POST/)
  t.match(preflight.headers.get('access-control-allow-headers'), /Authorization/)
  t.equal(preflight.headers.get('vary'), 'Origin')

  const refused = await fetch(`${relay.http}/admin/sessions/abc`, {
    method: 'OPTIONS',
    headers: { origin: 'https://evil-example.org', 'access-control-request-method': 'DELETE' },
  })
  t.equal(refused.status, 403)
  t.same(await refused.json(), { error: 'origin not allowed' })
  t.equal(refused.headers.get('access-control-allow-origin'), null)

  const created = await fetch(`${relay.http}/admin/sessions`, {
    method: 'POST',
    headers: { origin: 'https://a.b.example.org' },
  })
  t.equal(created.status, 201)
  t.equal(created.headers.get('access-control-allow-origin'), 'https://a.b.example.org')
  const foreign = await fetch(`${relay.http}/admin/sessions`, { headers: { origin: 'https://example.net' } })
  t.equal(foreign.headers.get('access-control-allow-origin'), null, 'no CORS grant for an origin outside the patterns')
  const discovery = await fetch(`${relay.http}/.well-known/relay-config`, {
    headers: { origin: 'https://app.example.com' },
  })
  t.equal(discovery.headers.get('access-control-allow-origin'), 'https://app.example.com')
})

t.test('WebSocket upgrades check Origin against the same patterns', async (t) => {
  const relay = await startTestRelay(t, ['--no-auth', '--allowed-origins', '*.example.com,localhost:*'])
  const session = await createSession(relay)
  const url = `${relay.ws}/relay/${session.id}`
  for (const origin of [
    'https://evil-example.com',
    'https://example.com.evil.net',
    'https://example.com@evil.net',
    'null',
    'https://example.com',
  ]) {
    const refusal = await refusalOf403(attach(url, { token: session.initiator_token, origin }))
    t.equal(refusal, 403, origin)
  }
  const sub = await attach(url, { token: session.initiator_token, origin: 'https://chat.example.com' })
  t.equal(sub.socket.readyState, sub.socket.OPEN)
  const local = await attach(url, { token: session.responder_token, origin: 'http://localhost:3000' })
  t.equal(local.socket.readyState, local.socket.OPEN)

  const sameOrigin = await startTestRelay(t)
  const s2 = await createSession(sameOrigin)
  t.equal(
    await refusalOf403(
      attach(`${sameOrigin.ws}/relay/${s2.id}`, { token: s2.initiator_token, origin: 'https://elsewhere.example' }),
    ),
    403,
    'empty list: cross-origin refused',
  )
  const same = await attach(`${sameOrigin.ws}/relay/${s2.id}`, {
    token: s2.initiator_token,
    origin: `http://127.0.0.1:${sameOrigin.port}`,
  })
  t.equal(same.socket.readyState, same.socket.OPEN, 'empty list: same origin allowed')
})

async function refusalOf403(attempt: Promise<unknown>): Promise<number> {
  try {
    await attempt
    return 101
  } catch (error) {
    return (error as { refusal?: { status: number } }).refusal?.status ?? -1
  }
}

async function refusalIgnored(attempt: Promise<unknown>): Promise<void> {
  try {
    await attempt
  } catch {}
}

/** A POST with a chunked body, which carries no Content-Length to refuse up front. */
function postChunked(port: number, body: string): Promise<{ status: number }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.write('POST /admin/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n')
      for (let i = 0; i < body.length; i += 4096) {
        const part = body.slice(i, i + 4096)
        socket.write(`${part.length.toString(16)}\r\n${part}\r\n`)
      }
      socket.write('0\r\n\r\n')
    })
    let text = ''
    socket.on('data', (chunk) => {
      text += chunk.toString()
      const match = /^HTTP\/1\.1 (\d{3})/.exec(text)
      if (match !== null) {
        socket.destroy()
        resolve({ status: Number(match[1]) })
      }
    })
    socket.on('error', reject)
  })
}
