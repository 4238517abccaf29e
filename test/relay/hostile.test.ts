// Hostile input against a relay with auth on (a real oidc-provider): a seeded fuzz of admin
// routes and upgrade requests, malformed JWTs made with jose against the provider's own keys,
// frames past the size limit, compressed frames with compression off, and Origin bypass
// attempts. The process never crashes, each input gets its documented status, and no answer
// or log line carries a token or a stack trace. The seed is the fuzz stage's fixed one;
// FUZZ_SEED=<n> runs or replays another.
import { createPublicKey, randomBytes, randomUUID } from 'node:crypto'
import type { JsonWebKey } from 'node:crypto'
import { connect } from 'node:net'
import t from 'tap'
import { SignJWT, decodeJwt, decodeProtectedHeader, generateKeyPair } from 'jose'
import { startOidcProvider } from '../fixtures/oidc-provider.js'
import { fuzzOptions } from '../helpers/fuzz.js'
import { frame, rawUpgrade } from '../helpers/raw-websocket.js'
import { attach, createSession, refusalOf, startTestRelay, until } from '../helpers/relay.js'
import type { Created, TestRelay } from '../helpers/relay.js'

const AUDIENCE = 'https://relay.test'
const FUZZ_REQUESTS = 400
const STANDARD_METHODS = ['GET', 'POST', 'DELETE', 'PUT', 'PATCH', 'OPTIONS', 'HEAD']
/** Every status the relay documents for some input. */
const DOCUMENTED = new Set([101, 200, 201, 204, 400, 401, 403, 404, 405, 409, 413, 426, 429, 431, 503])
// --max-headers-size's default: a request head past it gets uWebSockets.js's own 431 page.
const MAX_HEADERS_SIZE = 32 * 1024
/** What must never reach a client or a log line: a stack frame, a source position, an error class dump. */
const STACK_TRACE = /\n\s+at |node:internal|\.(?:ts|js):\d+|TypeError|RangeError|SyntaxError/

type Raw = { status: number; head: string; body: string } | { closed: true }

t.test('hostile input: fuzz, malformed JWTs, bad frames and Origin tricks', async (t) => {
  const oidc = await startOidcProvider()
  t.teardown(() => oidc.close())
  const relay = await startTestRelay(t, [
    '--oidc-issuer',
    oidc.issuer,
    '--oidc-audience',
    AUDIENCE,
    '--allowed-origins',
    '*.example.com',
    '--max-frame-size',
    '4096',
    '--peer-wait',
    '30s',
    // Hundreds of refusals from one address: the admission limits would answer most with 429.
    '--attach-failure-limit',
    'off',
    '--admin-auth-failure-limit',
    'off',
  ])
  const adminToken = await oidc.token()
  const live = await authedPair(relay, adminToken)
  const victim = await authedCreate(relay, adminToken)
  const jwts = await malformedJwts(oidc.jwksUri, adminToken)
  const secrets = [
    adminToken,
    live.session.initiator_token,
    live.session.responder_token,
    victim.initiator_token,
    victim.responder_token,
    ...Object.values(jwts),
  ]

  await t.test('malformed JWTs on every admin route: 401, and no JWT opens a slot', async (t) => {
    for (const [what, jwt] of Object.entries(jwts)) {
      for (const [method, path] of [
        ['POST', '/admin/sessions'],
        ['GET', '/admin/sessions'],
        ['GET', `/admin/sessions/${victim.id}`],
        ['DELETE', `/admin/sessions/${victim.id}`],
      ]) {
        const answer = await raw(relay.port, method!, path!, { authorization: `Bearer ${jwt}` })
        t.equal(status(answer), jwt.length > MAX_HEADERS_SIZE ? 431 : 401, `${what}: ${method} ${path}`)
        t.notOk(textOf(answer).includes(jwt.split('.')[2] || jwt), `${what}: not echoed`)
      }
      const refusal = await refusalOf(attach(`${relay.ws}/relay/${victim.id}`, { token: jwt }))
      t.equal(refusal.status, jwt.length > MAX_HEADERS_SIZE ? 431 : 401, `${what} as a slot token`)
    }
    t.equal(
      (await refusalOf(attach(`${relay.ws}/relay/${victim.id}`, { token: adminToken }))).status,
      401,
      'a valid admin JWT is not a slot token',
    )
    const tooBig = await raw(relay.port, 'GET', '/admin/sessions', {
      authorization: `Bearer ${'A'.repeat(1024 * 1024)}`,
    })
    t.equal(
      status(tooBig),
      431,
      'a 1 MiB Authorization header: past --max-headers-size, uWS answers 431 (docs/relay.md)',
    )
    const slotAsJwt = await raw(relay.port, 'GET', '/admin/sessions', {
      authorization: `Bearer ${victim.initiator_token}`,
    })
    t.equal(status(slotAsJwt), 401, 'a slot token is not an admin token')
    t.equal(
      (
        (await raw(relay.port, 'GET', `/admin/sessions/${victim.id}`, { authorization: `Bearer ${adminToken}` })) as {
          status: number
        }
      ).status,
      200,
      'the victim session is untouched',
    )
  })

  await t.test(`seeded fuzz of admin routes and upgrades (${FUZZ_REQUESTS} requests)`, async (t) => {
    // The stage's fixed seed (test/helpers/fuzz.ts), so a run repeats; FUZZ_SEED picks another.
    const { seed } = fuzzOptions()
    t.comment(`FUZZ_SEED=${seed}`)
    const random = mulberry32(seed)
    const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!
    let closedWithoutAnswer = 0
    const statuses = new Map<number, number>()
    for (let i = 0; i < FUZZ_REQUESTS; i++) {
      const input = fuzzInput(random, pick, { live: live.session, victim, adminToken, jwts: Object.values(jwts) })
      const answer = await raw(relay.port, input.method, input.path, input.headers, input.body)
      const what = `#${i} ${input.method} ${input.path.slice(0, 60)} (seed ${seed})`
      if ('closed' in answer) {
        // Non-standard methods too get an answer: the relay's 405 or 404 (docs/relay.md).
        closedWithoutAnswer++
        t.fail(`${what}: connection closed without an answer`)
        continue
      }
      statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1)
      if (!DOCUMENTED.has(answer.status)) t.fail(`${what}: undocumented status ${answer.status}`)
      const headSize =
        input.path.length + Object.entries(input.headers).reduce((sum, [k, v]) => sum + k.length + v.length, 0)
      if ((answer.status === 431) !== headSize > MAX_HEADERS_SIZE)
        t.fail(`${what}: ${answer.status} for a ${headSize}-byte head`)
      if (
        answer.status >= 400 &&
        answer.status !== 431 &&
        input.method !== 'HEAD' &&
        !isJsonError(answer.body) &&
        !(answer.status === 404 && input.path.startsWith('/.well-known'))
      ) {
        t.fail(`${what}: ${answer.status} without a JSON error body: ${answer.body.slice(0, 100)}`)
      }
      if (STACK_TRACE.test(answer.head + answer.body)) t.fail(`${what}: stack trace in the answer`)
      for (const secret of secrets)
        if ((answer.head + answer.body).includes(secret)) t.fail(`${what}: a token in the answer`)
    }
    t.comment(
      `statuses: ${JSON.stringify(Object.fromEntries([...statuses].sort((a, b) => a[0] - b[0])))}; closed without an answer: ${closedWithoutAnswer}`,
    )
    t.notOk(statuses.has(500), 'no 500')
    t.ok(statuses.size >= 5, 'the fuzz reached many answers')
  })

  await t.test('frames: above the size limit, fragmented past it, compressed with compression off', async (t) => {
    for (const [what, frames] of [
      ['one frame above --max-frame-size', [frame(0x2, randomBytes(5000))]],
      ['two fragments that add up past it', [frame(0x2, randomBytes(3000), false), frame(0x0, randomBytes(3000))]],
      ['a compressed frame (RSV1) on a connection without compression', [frame(0x2, randomBytes(16), true, true)]],
      ['a reserved opcode', [frame(0x3, randomBytes(16))]],
    ] as const) {
      const session = await authedCreate(relay, adminToken)
      const counterpart = await attach(`${relay.ws}/relay/${session.id}`, { token: session.responder_token })
      const hostile = await rawUpgrade(relay.port, `/relay/${session.id}`, session.initiator_token, [
        'Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits',
      ])
      t.notMatch(
        hostile.response,
        /sec-websocket-extensions/i,
        `${what}: no extension negotiated though the client offered permessage-deflate`,
      )
      for (const f of frames) hostile.socket.write(f)
      await hostile.ended
      t.pass(`${what}: the relay ended the hostile connection`)
      await until(
        async () => (await adminGet(relay, adminToken, session.id)).initiator_connected === false,
        2000,
        'the slot to empty',
      )
      t.equal(counterpart.received.length, 0, `${what}: nothing reached the counterpart`)
      t.equal(counterpart.socket.readyState, counterpart.socket.OPEN, `${what}: the counterpart stays for a reattach`)
      counterpart.socket.close()
    }
  })

  await t.test('Origin bypass attempts on upgrades and CORS', async (t) => {
    const refused = [
      'https://evil-example.com',
      'https://example.com',
      'https://example.com.evil.com',
      'https://a.example.com@evil.com',
      'https://evil.com@a.example.com',
      'https://user:pw@a.example.com',
      'https://evil.com#.a.example.com',
      'https://evil.com/.a.example.com',
      'https://evil.com?.a.example.com',
      'null',
      'https://a.example.com:8443',
      'https://a.example.com:99999',
      'https://a.example.com:-1',
      'https://a.example.com:443x',
      'file://a.example.com',
      'javascript://a.example.com',
      'https://a.example.com.',
      'https://a.example.com, https://evil.com',
      'https://a.example.com/',
      'https://a%2eexample.com',
      'https://*.example.com',
      '*',
      'https://a.example.com\\@evil.com',
      'https:a.example.com',
    ]
    for (const origin of refused) {
      const session = await authedCreate(relay, adminToken)
      const refusal = await refusalOf(
        attach(`${relay.ws}/relay/${session.id}`, { token: session.initiator_token, origin }),
      )
      t.equal(refusal.status, 403, `upgrade with Origin ${origin}`)
      t.same(refusal.body, { error: 'origin not allowed' })
      const cors = await raw(relay.port, 'GET', '/admin/sessions', { authorization: `Bearer ${adminToken}`, origin })
      t.notMatch((cors as { head: string }).head, /access-control-allow-origin/i, `no CORS grant for ${origin}`)
    }
    for (const origin of [
      'https://a.example.com',
      'https://A.Example.COM',
      'https://deep.a.example.com',
      'http://a.example.com:80',
      'https://a.example.com:443',
    ]) {
      const session = await authedCreate(relay, adminToken)
      const peer = await attach(`${relay.ws}/relay/${session.id}`, { token: session.initiator_token, origin })
      t.equal(peer.socket.readyState, peer.socket.OPEN, `upgrade with Origin ${origin}`)
      peer.socket.close()
    }
  })

  live.initiator.socket.send('after all that')
  t.equal((await live.responder.receive(1))[0]!.data.toString(), 'after all that', 'the live session kept flowing')
  live.responder.socket.send('both ways')
  t.equal((await live.initiator.receive(1))[0]!.data.toString(), 'both ways')
  t.equal((await fetch(`${relay.http}/healthz`)).status, 200, 'the process is up')

  const logs = relay.logText()
  t.ok(logs.length > 0, 'the relay logged')
  t.notMatch(logs, STACK_TRACE, 'no stack trace in the logs')
  t.notOk(
    relay.logs.some((line) => (line.level as number) >= 50),
    'no error logged',
  )
  for (const secret of secrets)
    t.notOk(logs.includes(secret.split('.')[2] || secret), `token …${secret.slice(-6)} not logged`)
})

async function malformedJwts(jwksUri: string, good: string): Promise<Record<string, string>> {
  const claims = decodeJwt(good)
  const kid = decodeProtectedHeader(good).kid as string
  const { keys } = (await (await fetch(jwksUri)).json()) as { keys: JsonWebKey[] }
  const publicPem = createPublicKey({ key: keys[0]!, format: 'jwk' }).export({ type: 'spki', format: 'pem' }).toString()
  const { privateKey: stranger } = await generateKeyPair('RS256')
  const [header, payload, signature] = good.split('.') as [string, string, string]
  return {
    'alg none': `${b64({ alg: 'none', kid })}.${payload}.`,
    'alg none with a signature': `${b64({ alg: 'none', kid })}.${payload}.${signature}`,
    "HS256 signed with the provider's public key as the secret": await new SignJWT(claims)
      .setProtectedHeader({ alg: 'HS256', kid })
      .sign(new TextEncoder().encode(publicPem)),
    'an unknown kid': await new SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid: randomUUID() }).sign(stranger),
    "the provider's kid, another key": await new SignJWT(claims)
      .setProtectedHeader({ alg: 'RS256', kid })
      .sign(stranger),
    'no kid, another key': await new SignJWT(claims).setProtectedHeader({ alg: 'RS256' }).sign(stranger),
    'a 20 KiB token': `${header}.${b64({ ...claims, pad: 'x'.repeat(20 * 1024) })}.${signature}`,
    'a 100 KiB token': `${header}.${'A'.repeat(100 * 1024)}.${signature}`,
    'header that is not JSON': `${Buffer.from('{"alg":').toString('base64url')}.${payload}.${signature}`,
    'two segments': `${header}.${payload}`,
    'a payload swapped in': `${header}.${b64({ ...claims, scope: 'relay:session:create relay:session:read relay:session:delete', sub: 'admin' })}.${signature}`,
  }
}

type FuzzContext = { live: Created; victim: Created; adminToken: string; jwts: string[] }
type FuzzInput = { method: string; path: string; headers: Record<string, string>; body: Buffer }

function fuzzInput(random: () => number, pick: <T>(items: readonly T[]) => T, c: FuzzContext): FuzzInput {
  const junk = (max: number, alphabet = "abcXYZ019-._~%!$&'()*+,;=:@/?"): string =>
    Array.from({ length: Math.floor(random() * max) }, () => alphabet[Math.floor(random() * alphabet.length)]).join('')
  const ids = [
    c.victim.id,
    'x',
    junk(40),
    '%00',
    '..%2f..%2fetc%2fpasswd',
    'a'.repeat(2000),
    encodeURIComponent('<script>'),
    '',
  ]
  const path =
    pick([
      () => '/admin/sessions',
      () => `/admin/sessions/${pick(ids)}`,
      () => `/admin/sessions/${pick(ids)}/${junk(10)}`,
      () => `/relay/${pick(ids)}`,
      () => `/relay/${c.live.id}`,
      () => '/.well-known/relay-config',
      () => '/healthz',
      () => '/metrics',
      () => `//admin//sessions/${junk(5)}`,
      () => `/admin/../admin/sessions`,
      () => `/${junk(30)}`,
    ])() + (random() < 0.3 ? `?${junk(50)}` : '')
  const tokens = [
    c.adminToken,
    c.live.initiator_token,
    c.victim.responder_token,
    ...c.jwts,
    junk(30),
    'A'.repeat(22),
    '',
  ]
  const headers: Record<string, string> = {}
  if (random() < 0.7)
    headers.authorization = pick(['Bearer ', 'bearer ', 'Basic ', 'Bearer  ', 'Negotiate ', '']) + pick(tokens)
  if (random() < 0.4) {
    headers.upgrade = pick(['websocket', 'WebSocket', 'h2c', junk(8)])
    headers.connection = pick(['Upgrade', 'keep-alive, Upgrade', 'close'])
    if (random() < 0.7) headers['sec-websocket-key'] = pick([randomKey(random), '', junk(24)])
    if (random() < 0.7) headers['sec-websocket-version'] = pick(['13', '8', junk(3)])
    if (random() < 0.3) headers['sec-websocket-extensions'] = 'permessage-deflate; client_max_window_bits'
    if (random() < 0.3) headers['sec-websocket-protocol'] = junk(20, 'abc, ')
  }
  if (random() < 0.3)
    headers.origin = pick([
      'https://a.example.com',
      'https://evil-example.com',
      'null',
      junk(20),
      'https://a.example.com@evil.com',
    ])
  if (random() < 0.3) headers['content-type'] = pick(['application/json', 'text/plain', junk(15)])
  if (random() < 0.3) headers[`x-${junk(10, 'abcdefghij-')}`] = junk(200, 'abc !"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~')
  const body =
    random() < 0.4
      ? pick([
          () => randomBytesFrom(random, Math.floor(random() * 2048)),
          () => Buffer.from('{"a":'),
          () => Buffer.from('[1,2]'),
          () => Buffer.from('{}'),
          () => Buffer.from('null'),
        ])()
      : Buffer.alloc(0)
  const method = random() < 0.9 ? pick(STANDARD_METHODS) : pick(['PROPFIND', 'FOO', 'TRACE', 'CONNECT'])
  // A DELETE or a valid upgrade on the live session would end it: it must keep flowing to the end.
  const safePath = path.startsWith(`/admin/sessions/${c.live.id}`) ? `/admin/sessions/${c.victim.id}` : path
  return { method, path: safePath, headers, body }
}

function mulberry32(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let x = Math.imul(a ^ (a >>> 15), 1 | a)
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296
  }
}

function randomBytesFrom(random: () => number, length: number): Buffer {
  const bytes = Buffer.alloc(length)
  for (let i = 0; i < length; i++) bytes[i] = Math.floor(random() * 256)
  return bytes
}

function randomKey(random: () => number): string {
  return randomBytesFrom(random, 16).toString('base64')
}

/** One request over its own TCP connection, written byte for byte; the answer, or that it was closed unanswered. */
function raw(
  port: number,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body: Buffer = Buffer.alloc(0),
): Promise<Raw> {
  // No deadline of its own: a request the relay sits on hangs the file until tap's timeout fails it.
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1')
    const lines = [
      `${method} ${path} HTTP/1.1`,
      `Host: 127.0.0.1:${port}`,
      ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
    ]
    if (body.length > 0 || ['POST', 'PUT', 'PATCH'].includes(method)) lines.push(`Content-Length: ${body.length}`)
    socket.write(Buffer.concat([Buffer.from(lines.join('\r\n') + '\r\n\r\n', 'latin1'), body]))
    let data = Buffer.alloc(0)
    const done = (answer: Raw): void => {
      socket.destroy()
      resolve(answer)
    }
    socket.on('data', (chunk: Buffer) => {
      data = Buffer.concat([data, chunk])
      const end = data.indexOf('\r\n\r\n')
      if (end === -1) return
      const head = data.subarray(0, end).toString('latin1')
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0)
      const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0)
      const bodyBytes = data.subarray(end + 4)
      if (status === 101 || method === 'HEAD' || bodyBytes.length >= length)
        done({ status, head, body: bodyBytes.toString('utf8') })
    })
    socket.on('close', () => done({ closed: true }))
    socket.on('error', () => {})
  })
}

function status(answer: Raw): number {
  return 'closed' in answer ? -1 : answer.status
}

function textOf(answer: Raw): string {
  return 'closed' in answer ? '' : answer.head + answer.body
}

function isJsonError(body: string): boolean {
  try {
    const value = JSON.parse(body) as unknown
    return typeof value === 'object' && value !== null && typeof (value as { error?: unknown }).error === 'string'
  } catch {
    return false
  }
}

async function authedCreate(relay: TestRelay, token: string): Promise<Created> {
  return await createSession(relay, { authorization: `Bearer ${token}` })
}

async function authedPair(relay: TestRelay, token: string) {
  const session = await authedCreate(relay, token)
  const url = `${relay.ws}/relay/${session.id}`
  return {
    session,
    initiator: await attach(url, { token: session.initiator_token }),
    responder: await attach(url, { token: session.responder_token }),
  }
}

async function adminGet(relay: TestRelay, token: string, id: string): Promise<Record<string, unknown>> {
  return (await (
    await fetch(`${relay.http}/admin/sessions/${id}`, { headers: { authorization: `Bearer ${token}` } })
  ).json()) as Record<string, unknown>
}

function b64(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url')
}
