// Fuzz stage, relay: generated admin-API requests and WebSocket upgrade requests, written byte
// for byte on raw connections to one relay with real OIDC auth. Whatever arrives, the relay
// answers every whole request (no deadline: a hang fails by tap's timeout) without a 5xx of its
// own making (503 is a documented answer, 505 uWS's to a broken request line), keeps serving a live pair, and writes no token into its logs. Bounded: seed and run count from test/helpers/fuzz.ts.
import { randomBytes } from 'node:crypto'
import fc from 'fast-check'
import t from 'tap'
import { startOidcProvider } from '../fixtures/oidc-provider.js'
import { fuzzOptions, glued, headerName, headerValue } from '../helpers/fuzz.js'
import { keepPromise, rawRequest, rawRequestBytes } from '../helpers/raw-http.js'
import type { RawAnswer } from '../helpers/raw-http.js'
import { attach, createSession, startTestRelay } from '../helpers/relay.js'

const AUDIENCE = 'https://relay.test'

/**
 * A relay's own failure: a 5xx other than the documented 503 and uWebSockets.js's 505, its
 * answer to a request line that is not HTTP/1.1 (what a CR LF inside a header value makes of
 * the next line: "This server does not support HTTP/1.0", before any relay code runs).
 */
const serverFault = (status: number | null): boolean =>
  status !== null && status >= 500 && status !== 503 && status !== 505

/**
 * Sends one generated request and fails on a fault: a 5xx of the relay's own, or a whole request
 * (a body as long as its Content-Length says, filled in when it promised more) closed without an
 * answer. One that still promises more is half-closed after the write; its end may be a close.
 */
async function exchange(
  port: number,
  what: string,
  method: string,
  target: string,
  headers: Array<[string, string]>,
  body = '',
): Promise<RawAnswer> {
  const promise = keepPromise(headers, body)
  const answer = await rawRequest(port, rawRequestBytes(method, target.replace(/\s/g, ''), headers, promise.body), {
    end: !promise.whole,
  })
  if (serverFault(answer.status)) throw new Error(`${what} answered ${answer.head}`)
  if (answer.ended === 'closed' && promise.whole) throw new Error(`${what}: a whole request, closed without an answer`)
  return answer
}

t.test('fuzz: admin API and upgrade requests never crash the relay, answer 5xx or log a token', async (t) => {
  const oidc = await startOidcProvider()
  t.teardown(() => oidc.close())
  const relay = await startTestRelay(t, [
    '--oidc-issuer',
    oidc.issuer,
    '--oidc-audience',
    AUDIENCE,
    '--admin-auth-failure-limit',
    'off',
    '--attach-failure-limit',
    'off',
    '--session-create-limit',
    'off',
  ])
  const adminToken = await oidc.token()
  const asAdmin = { authorization: `Bearer ${adminToken}` }
  const session = await createSession(relay, asAdmin)
  const live = await createSession(relay, asAdmin)
  const liveUrl = `${relay.ws}/relay/${live.id}`
  const initiator = await attach(liveUrl, { token: live.initiator_token })
  const responder = await attach(liveUrl, { token: live.responder_token })
  const secrets = [
    adminToken,
    session.initiator_token,
    session.responder_token,
    live.initiator_token,
    live.responder_token,
  ]

  const authorization = fc.oneof(
    fc.constant(`Bearer ${adminToken}`),
    fc.constant(`bearer ${adminToken.slice(0, -3)}abc`),
    fc.constant(`Bearer ${session.initiator_token}`),
    glued(['Bearer ', 'Basic ', ' ', 'eyJ', '.', 'A', '=', ','], 6),
  )
  const headers = fc.array(fc.tuple(headerName, headerValue), { maxLength: 4 })
  const withAuth = fc
    .tuple(headers, fc.option(authorization))
    .map(([list, auth]) => (auth === null ? list : [...list, ['authorization', auth] as [string, string]]))

  const adminRequest = fc.record({
    method: fc.oneof(
      { weight: 6, arbitrary: fc.constantFrom('GET', 'POST', 'DELETE', 'PUT', 'PATCH', 'HEAD', 'OPTIONS') },
      fc.constantFrom('PROPFIND', 'CONNECT', 'TRACE'),
      fc.stringMatching(/^[A-Z]{1,8}$/),
    ),
    target: glued(
      [
        '/admin',
        '/sessions',
        '/',
        session.id,
        '..',
        '%2e',
        '%2F',
        '?',
        'limit=',
        'cursor=',
        '&',
        '%',
        '%00',
        '//',
        'x',
        '*',
        '\\',
      ],
      10,
    ).map((path) => (path.startsWith('/') ? path : `/admin/sessions${path}`)),
    headers: withAuth,
    body: fc.oneof(fc.constant(''), fc.json({ maxDepth: 3 }), fc.string({ maxLength: 200 })),
  })
  const answered = new Map<string, number>()
  const tally = (status: number | null): void => {
    answered.set(String(status), (answered.get(String(status)) ?? 0) + 1)
  }
  await fc.assert(
    fc.asyncProperty(adminRequest, async ({ method, target, headers, body }) => {
      tally((await exchange(relay.port, `${method} ${target}`, method, target, headers, body)).status)
    }),
    fuzzOptions(),
  )
  t.pass("admin requests: no 5xx of the relay's own")

  const key = fc.oneof(
    fc.constant(randomBytes(16).toString('base64')),
    fc.string({ maxLength: 30 }),
    fc.base64String({ maxLength: 40 }),
  )
  const upgradeRequest = fc.record({
    target: fc.oneof(
      fc.constant(`/relay/${session.id}`),
      fc.constant(`/relay/${live.id}`),
      glued(['/relay/', session.id, '?token=', session.responder_token, '%20', '&', '/', '..', 'x'], 6).map(
        (path) => `/relay/${path}`,
      ),
    ),
    upgrade: fc.oneof(
      fc.constantFrom('websocket', 'WebSocket', 'h2c', 'websocket, h2c', ''),
      fc.string({ maxLength: 12 }),
    ),
    connection: fc.oneof(
      fc.constantFrom('Upgrade', 'upgrade, keep-alive', 'HTTP2-Settings, Upgrade', 'close'),
      fc.string({ maxLength: 12 }),
    ),
    version: fc.oneof(fc.constantFrom('13', '8', '13, 8', ''), fc.string({ maxLength: 4 })),
    key,
    token: fc.option(
      fc.oneof(
        fc.constant(session.initiator_token),
        fc.constant(session.responder_token),
        fc.string({ maxLength: 30 }),
      ),
    ),
    extra: headers,
  })
  await fc.assert(
    fc.asyncProperty(upgradeRequest, async (request) => {
      const list: Array<[string, string]> = [
        ['upgrade', request.upgrade],
        ['connection', request.connection],
        ['sec-websocket-version', request.version],
        ['sec-websocket-key', request.key],
        ...request.extra,
      ]
      if (request.token !== null) list.push(['authorization', `Bearer ${request.token}`])
      tally((await exchange(relay.port, `upgrade ${JSON.stringify(request)}`, 'GET', request.target, list)).status)
    }),
    fuzzOptions(),
  )
  t.pass("upgrade requests: no 5xx of the relay's own")
  // A stage whose requests all die unanswered would pass while testing nothing.
  const statuses = [...answered.keys()].filter((status) => status !== 'null')
  t.ok(
    statuses.length >= 3,
    `the relay answered with several statuses: ${JSON.stringify(Object.fromEntries(answered))}`,
  )

  t.equal((await fetch(`${relay.http}/healthz`)).status, 200, 'the relay still serves')
  initiator.socket.send('after the fuzz')
  t.equal((await responder.receive(1))[0]!.data.toString(), 'after the fuzz', 'the live pair still forwards')
  initiator.socket.close()
  responder.socket.close()
  await Promise.all([initiator.closed, responder.closed])
  const logs = relay.logText()
  for (const secret of secrets) {
    const tail = secret.split('.').at(-1) ?? secret
    t.notOk(logs.includes(tail), `token …${secret.slice(-6)} is in no log line`)
  }
})
