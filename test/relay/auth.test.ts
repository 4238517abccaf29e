import { createPublicKey, randomUUID } from 'node:crypto'
import type { JsonWebKey } from 'node:crypto'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import type { Test } from 'tap'
import { SignJWT, decodeJwt, decodeProtectedHeader, exportJWK, generateKeyPair, importJWK } from 'jose'
import type { JWK, JWTPayload } from 'jose'
import { startOidcProvider } from '../fixtures/oidc-provider.js'
import type { OidcFixture, OidcFixtureOptions } from '../fixtures/oidc-provider.js'
import { attach, refusalOf, startTestRelay, until } from '../helpers/relay.js'
import type { TestRelay } from '../helpers/relay.js'

const AUDIENCE = 'https://relay.test'
const OTHER_AUDIENCE = 'https://other.test'
const CREATE = 'relay:session:create'
const READ = 'relay:session:read'
const DELETE = 'relay:session:delete'
const UNAVAILABLE = { error: 'identity provider unavailable' }

t.test('each admin route needs its own scope: 403 insufficient_scope without it', async (t) => {
  const oidc = await provider(t)
  const relay = await startTestRelay(t, authFlags(oidc.issuer))
  const [create, read, del, all, none] = await Promise.all([
    oidc.token({ scopes: [CREATE] }),
    oidc.token({ scopes: [READ] }),
    oidc.token({ scopes: [DELETE] }),
    oidc.token(),
    oidc.token({ scopes: [] }),
  ])

  const created = await call(relay, 'POST', '/admin/sessions', bearer(create))
  t.equal(created.status, 201, 'create with relay:session:create')
  const id = (created.body as { id: string }).id
  t.equal((await call(relay, 'GET', '/admin/sessions', bearer(read))).status, 200, 'list with relay:session:read')
  t.equal((await call(relay, 'GET', `/admin/sessions/${id}`, bearer(read))).status, 200, 'get with relay:session:read')

  const refusals: Array<[string, string, string, string]> = [
    ['POST', '/admin/sessions', read, CREATE],
    ['POST', '/admin/sessions', del, CREATE],
    ['POST', '/admin/sessions', none, CREATE],
    ['GET', '/admin/sessions', create, READ],
    ['GET', '/admin/sessions', del, READ],
    ['GET', '/admin/sessions', none, READ],
    ['GET', `/admin/sessions/${id}`, create, READ],
    ['GET', `/admin/sessions/${id}`, del, READ],
    ['GET', '/admin/sessions/no-such-session', create, READ],
    ['DELETE', `/admin/sessions/${id}`, create, DELETE],
    ['DELETE', `/admin/sessions/${id}`, read, DELETE],
    ['DELETE', `/admin/sessions/${id}`, none, DELETE],
  ]
  for (const [method, path, token, scope] of refusals) {
    const what = `${method} ${path} with ${scopesOf(token) || 'no scope'}`
    const response = await call(relay, method, path, bearer(token))
    t.equal(response.status, 403, what)
    t.ok(isErrorBody(response.body), `${what}: JSON error body`)
    t.match(response.wwwAuthenticate, /^Bearer error="insufficient_scope"/, `${what}: WWW-Authenticate`)
    t.match(response.wwwAuthenticate, scope, `${what}: names the scope it needs`)
  }
  const list = await call(relay, 'GET', '/admin/sessions', bearer(all))
  t.equal((list.body as { sessions: unknown[] }).sessions.length, 1, 'refused creates created nothing')
  t.equal(
    (await call(relay, 'GET', `/admin/sessions/${id}`, bearer(read))).status,
    200,
    'refused deletes deleted nothing',
  )

  t.equal(
    (await call(relay, 'DELETE', `/admin/sessions/${id}`, bearer(del))).status,
    204,
    'delete with relay:session:delete',
  )
  t.equal((await call(relay, 'GET', `/admin/sessions/${id}`, bearer(read))).status, 404, 'and it is gone')
  t.equal(
    (await call(relay, 'POST', '/admin/sessions', `bearer  ${all}`)).status,
    201,
    'the scheme is case-insensitive',
  )
  noTokenLogged(t, relay, [create, read, del, all, none])
})

t.test('missing, malformed and invalid tokens: 401 invalid_token', async (t) => {
  // A 2 s lifetime: the same token is first accepted, then refused once the relay's clock,
  // injected, is moved past its exp.
  const oidc = await provider(t, { audiences: [AUDIENCE, OTHER_AUDIENCE], accessTokenTtlSeconds: 2 })
  const stranger = await provider(t)
  // Thirty-odd refusals from one address: past the default admission limit, tested on its own
  // in admission.test.ts.
  let clock = Date.now()
  const relay = await startTestRelay(t, [...authFlags(oidc.issuer), '--admin-auth-failure-limit', 'off'], {
    auth: { now: () => clock },
  })
  const good = await oidc.token()
  t.equal(
    (await call(relay, 'POST', '/admin/sessions', bearer(good))).status,
    201,
    'control: the fresh token is accepted',
  )

  const [header, payload, signature] = good.split('.') as [string, string, string]
  const mid = Math.floor(signature.length / 2)
  const tampered = `${header}.${payload}.${signature.slice(0, mid)}${signature[mid] === 'A' ? 'B' : 'A'}${signature.slice(mid + 1)}`
  const kid = decodeProtectedHeader(good).kid as string
  const claims = decodeJwt(good)
  const publicPem = await publicKeyPem(oidc.jwksUri)
  const hs256 = await new SignJWT(claims)
    .setProtectedHeader({ alg: 'HS256', kid })
    .sign(new TextEncoder().encode(publicPem))
  const algNone = `${b64json({ alg: 'none', kid })}.${b64json(claims)}.`
  const foreign = await stranger.token()
  const otherAudience = await oidc.token({ audience: OTHER_AUDIENCE })
  const huge = `${b64json({ alg: 'RS256', kid })}.${b64json({ ...claims, pad: 'x'.repeat(20 * 1024) })}.${signature}`

  // The message names the first check that failed: a token from another issuer is signed by a
  // key the relay's provider never published, which is found before its `iss` is read.
  const cases: Array<[string, string | undefined, string]> = [
    ['no Authorization header', undefined, 'missing bearer token'],
    ['Basic credentials', 'Basic dXNlcjpwYXNz', 'malformed authorization header'],
    ['Bearer with nothing after it', 'Bearer', 'malformed authorization header'],
    ['garbage bearer token', 'Bearer abc', 'malformed token'],
    ['a 20 KiB token', bearer(huge), 'malformed token'],
    ['another issuer', bearer(foreign), 'token signing key unknown'],
    ['another audience', bearer(otherAudience), 'token audience not accepted'],
    ['a tampered signature', bearer(tampered), 'invalid token signature'],
    ['HS256 signed with the public key', bearer(hs256), 'token algorithm not accepted'],
    ['alg none', bearer(algNone), 'token algorithm not accepted'],
  ]
  for (const [what, authorization, reason] of cases) {
    for (const [method, path] of [
      ['POST', '/admin/sessions'],
      ['GET', '/admin/sessions'],
      ['DELETE', '/admin/sessions/x'],
    ] as const) {
      const response = await call(relay, method, path, authorization)
      t.equal(response.status, 401, `${what}: ${method} ${path}`)
      const challenge = authorization === undefined ? 'Bearer' : 'Bearer error="invalid_token"'
      t.equal(
        response.wwwAuthenticate,
        challenge,
        `${what}: WWW-Authenticate (no error code without credentials, RFC 6750)`,
      )
      t.same(response.body, { error: reason }, `${what}: a JSON error body that says why`)
    }
  }

  clock = (claims.exp as number) * 1000 + 1_000 // jose allows no clock tolerance: one second past exp is expired
  const expired = await call(relay, 'POST', '/admin/sessions', bearer(good))
  t.equal(expired.status, 401, 'the same token once expired')
  t.equal(expired.wwwAuthenticate, 'Bearer error="invalid_token"')
  t.same(expired.body, { error: 'token expired' })
  noTokenLogged(t, relay, [good, tampered, hs256, algNone, foreign, otherAudience, huge])
})

t.test('with a key the relay trusts: scp scopes, nbf, issuer, expiry (required), algorithms, size', async (t) => {
  const mini = await miniIssuer(t)
  const relay = await startTestRelay(t, authFlags(mini.issuer))
  const now = Math.floor(Date.now() / 1000)
  const tokens = {
    scpCreate: await mini.sign({ scp: [CREATE] }),
    scpAll: await mini.sign({ scp: [CREATE, READ, DELETE] }),
    scopeAndScp: await mini.sign({ scope: READ, scp: [CREATE] }),
    notYet: await mini.sign({ scope: CREATE, nbf: now + 600 }),
    expired: await mini.sign({ scope: CREATE, iat: now - 600, exp: now - 300 }),
    otherIssuer: await mini.sign({ scope: CREATE, iss: 'https://issuer.example' }),
    otherAudience: await mini.sign({ scope: CREATE, aud: OTHER_AUDIENCE }),
    noAudience: await mini.sign({ scope: CREATE, aud: undefined }),
    ps256: await mini.sign({ scope: CREATE }, 'PS256'),
    hs256: await new SignJWT({ iss: mini.issuer, aud: AUDIENCE, scope: CREATE, exp: now + 300 })
      .setProtectedHeader({ alg: 'HS256', kid: mini.kid })
      .sign(new TextEncoder().encode(JSON.stringify(mini.publicJwk))),
    noExp: await mini.sign({ scope: CREATE, exp: undefined }),
    big: await mini.sign({ scope: CREATE, pad: 'x'.repeat(8 * 1024) }),
    huge: await mini.sign({ scope: CREATE, pad: 'x'.repeat(20 * 1024) }),
  }

  t.equal(
    (await call(relay, 'POST', '/admin/sessions', bearer(tokens.scpCreate))).status,
    201,
    'scp array grants create',
  )
  const scpRead = await call(relay, 'GET', '/admin/sessions', bearer(tokens.scpCreate))
  t.equal(scpRead.status, 403, 'scp array without read')
  t.match(scpRead.wwwAuthenticate, /insufficient_scope/)
  t.equal((await call(relay, 'GET', '/admin/sessions', bearer(tokens.scpAll))).status, 200, 'scp array grants read')
  t.equal(
    (await call(relay, 'GET', '/admin/sessions', bearer(tokens.scopeAndScp))).status,
    200,
    'scope and scp both count: read',
  )
  t.equal(
    (await call(relay, 'POST', '/admin/sessions', bearer(tokens.scopeAndScp))).status,
    201,
    'scope and scp both count: create',
  )
  t.equal((await call(relay, 'POST', '/admin/sessions', bearer(tokens.big))).status, 201, 'an 8 KiB token is fine')
  t.equal(
    (await call(relay, 'POST', '/admin/sessions', bearer(tokens.ps256))).status,
    201,
    'another asymmetric algorithm',
  )
  t.equal((await call(relay, 'POST', '/admin/sessions', bearer(tokens.noAudience))).status, 401, 'a token without aud')

  for (const [what, token, reason] of [
    ['nbf in the future', tokens.notYet, /not yet valid/],
    ['expired', tokens.expired, /expired/],
    ['another issuer', tokens.otherIssuer, /issuer/],
    ['another audience', tokens.otherAudience, /audience/],
    ['HS256 signed with the public key', tokens.hs256, /algorithm/],
    ['a 20 KiB token with a good signature', tokens.huge, /malformed/],
  ] as const) {
    const response = await call(relay, 'POST', '/admin/sessions', bearer(token))
    t.equal(response.status, 401, what)
    t.equal(response.wwwAuthenticate, 'Bearer error="invalid_token"', `${what}: WWW-Authenticate`)
    t.match(response.body, { error: reason }, `${what}: says why`)
  }
  const noExp = await call(relay, 'POST', '/admin/sessions', bearer(tokens.noExp))
  t.equal(noExp.status, 401, 'a token without exp')
  t.equal(noExp.wwwAuthenticate, 'Bearer error="invalid_token"', 'without exp: WWW-Authenticate')
  t.same(noExp.body, { error: 'token has no exp claim' }, 'without exp: says why')
  noTokenLogged(t, relay, Object.values(tokens))
})

t.test('key rotation: a new kid is fetched once, shared by concurrent requests, no restart', async (t) => {
  const oidc = await provider(t)
  let clock = Date.now()
  const relay = await startTestRelay(t, authFlags(oidc.issuer), { auth: { refreshCooldownMs: 200, now: () => clock } })
  const before = await oidc.token()
  t.equal((await call(relay, 'POST', '/admin/sessions', bearer(before))).status, 201)
  const fetched = oidc.requestCount('/jwks')

  await oidc.rotateKeys()
  const after = await oidc.token()
  t.not(decodeProtectedHeader(after).kid, decodeProtectedHeader(before).kid, 'the provider signs with a new kid')
  clock += 250 // past the cooldown that the start-up fetch began
  const statuses = await Promise.all(
    Array.from({ length: 20 }, async () => (await call(relay, 'POST', '/admin/sessions', bearer(after))).status),
  )
  t.same(statuses, Array(20).fill(201), 'every concurrent request with the new kid is accepted')
  t.equal(oidc.requestCount('/jwks') - fetched, 1, 'one key refresh served all of them')
  noTokenLogged(t, relay, [before, after])
})

t.test('keys are cached and unknown kids cannot force refreshes during the cooldown', async (t) => {
  const oidc = await provider(t)
  const relay = await startTestRelay(t, authFlags(oidc.issuer), { auth: { refreshCooldownMs: 60_000 } })
  const known = await oidc.token()
  t.equal((await call(relay, 'POST', '/admin/sessions', bearer(known))).status, 201)
  const fetched = oidc.requestCount('/jwks')
  t.equal(fetched, 1, 'the start-up fetch')

  const cached = await Promise.all(
    Array.from({ length: 20 }, async () => (await call(relay, 'GET', '/admin/sessions', bearer(known))).status),
  )
  t.same(cached, Array(20).fill(200))
  t.equal(oidc.requestCount('/jwks'), fetched, 'a known kid needs no fetch')

  await oidc.rotateKeys()
  const unknown = await oidc.token()
  const refused = await Promise.all(
    Array.from({ length: 20 }, () => call(relay, 'POST', '/admin/sessions', bearer(unknown))),
  )
  t.same(
    refused.map((r) => r.status),
    Array(20).fill(401),
    'unknown kid while cooling down',
  )
  t.ok(refused.every((r) => r.wwwAuthenticate === 'Bearer error="invalid_token"'))
  t.equal(oidc.requestCount('/jwks'), fetched, 'no refresh before the cooldown since the last one ends')
  t.equal(oidc.requestCount('/.well-known/openid-configuration'), 1, 'nor a discovery fetch')
  noTokenLogged(t, relay, [known, unknown])
})

t.test('provider down at start: 503 on admin and discovery, data plane up, recovers without restart', async (t) => {
  const oidc = await provider(t)
  const token = await oidc.token()
  await oidc.stop()
  const relay = await startTestRelay(t, authFlags(oidc.issuer), {
    auth: { retryMs: 100, refreshCooldownMs: 100, fetchTimeoutMs: 1_000 },
  })

  for (const [method, path] of [
    ['POST', '/admin/sessions'],
    ['GET', '/admin/sessions'],
    ['GET', '/admin/sessions/x'],
    ['DELETE', '/admin/sessions/x'],
  ] as const) {
    const response = await call(relay, method, path, bearer(token))
    t.equal(response.status, 503, `${method} ${path}`)
    t.same(response.body, UNAVAILABLE)
  }
  const discovery = await call(relay, 'GET', '/.well-known/relay-config')
  t.equal(discovery.status, 503, 'discovery')
  t.same(discovery.body, UNAVAILABLE)
  t.equal((await fetch(`${relay.http}/healthz`)).status, 200, 'healthz still answers')
  t.ok(
    relay.logs.some((l) => l.level === 40 && /identity provider unavailable/.test(String(l.msg))),
    'a warning is logged',
  )

  await oidc.start()
  await until(() => oidc.requestCount('/jwks') > 0, 5_000, 'a background retry to fetch the keys')
  t.equal((await call(relay, 'POST', '/admin/sessions', bearer(token))).status, 201, 'admin works again')
  t.equal((await call(relay, 'GET', '/.well-known/relay-config')).status, 200, 'discovery works again')
  t.ok(
    relay.logs.some((l) => l.level === 30 && /reachable again/.test(String(l.msg))),
    'the recovery is logged',
  )
  noTokenLogged(t, relay, [token])
})

t.test('provider down mid-run: cached keys keep working; an unknown kid answers 503 until it is back', async (t) => {
  const oidc = await provider(t)
  let clock = Date.now()
  const relay = await startTestRelay(t, authFlags(oidc.issuer), {
    auth: { retryMs: 100, refreshCooldownMs: 100, fetchTimeoutMs: 1_000, now: () => clock },
  })
  const known = await oidc.token()
  t.equal((await call(relay, 'POST', '/admin/sessions', bearer(known))).status, 201)
  await oidc.rotateKeys()
  const unknown = await oidc.token()
  await oidc.stop()

  t.equal(
    (await call(relay, 'POST', '/admin/sessions', bearer(known))).status,
    201,
    'a known kid while the provider is down',
  )
  t.equal((await call(relay, 'GET', '/admin/sessions', bearer(known))).status, 200)
  t.equal((await call(relay, 'GET', '/.well-known/relay-config')).status, 200, 'discovery from the cached metadata')
  clock += 150 // past the refresh cooldown
  const refused = await call(relay, 'POST', '/admin/sessions', bearer(unknown))
  t.equal(refused.status, 503, 'a kid the relay cannot look up')
  t.same(refused.body, UNAVAILABLE)
  t.equal(
    (await call(relay, 'POST', '/admin/sessions', bearer(known))).status,
    201,
    'the failed refresh kept the cached keys',
  )

  await oidc.start()
  clock += 150 // past the cooldown of the refresh that failed
  t.equal(
    (await call(relay, 'POST', '/admin/sessions', bearer(unknown))).status,
    201,
    'the new kid is accepted once the provider is back',
  )
  noTokenLogged(t, relay, [known, unknown])
})

t.test(
  'a key the provider withdraws stops validating once the key set is due (1h by default), without restart',
  async (t) => {
    const oidc = await provider(t)
    let clock = 0
    const relay = await startTestRelay(t, authFlags(oidc.issuer), { auth: { now: () => clock } })
    const old = await oidc.token()
    t.equal((await call(relay, 'POST', '/admin/sessions', bearer(old))).status, 201)

    await oidc.rotateKeys({ keepOld: true })
    const fresh = await oidc.token()
    t.not(decodeProtectedHeader(fresh).kid, decodeProtectedHeader(old).kid, 'the provider signs with a new kid')
    clock += 5_000 // past the unknown-kid cooldown the start-up fetch began
    t.equal((await call(relay, 'POST', '/admin/sessions', bearer(fresh))).status, 201, 'the new key validates')
    const fetched = oidc.requestCount('/jwks')

    await oidc.dropOldKeys()
    clock += 3_600_000 - 1
    t.equal(
      (await call(relay, 'POST', '/admin/sessions', bearer(old))).status,
      201,
      'the removed key, before the keys are due',
    )
    t.equal(oidc.requestCount('/jwks'), fetched, 'no fetch before then')
    clock += 1
    const refused = await call(relay, 'POST', '/admin/sessions', bearer(old))
    t.equal(refused.status, 401, 'the removed key, once they are due')
    t.same(refused.body, { error: 'token signing key unknown' })
    t.equal(refused.wwwAuthenticate, 'Bearer error="invalid_token"')
    t.equal(oidc.requestCount('/jwks'), fetched + 1, 'one fetch')
    t.equal((await call(relay, 'POST', '/admin/sessions', bearer(fresh))).status, 201, 'the new key still validates')
    noTokenLogged(t, relay, [old, fresh])
  },
)

t.test('provider answering 500 when the keys are due: the last good keys keep validating', async (t) => {
  const oidc = await provider(t)
  let clock = 0
  const relay = await startTestRelay(t, authFlags(oidc.issuer), { auth: { now: () => clock } })
  const seen = await oidc.token()
  const unseen = await oidc.token()
  t.equal((await call(relay, 'POST', '/admin/sessions', bearer(seen))).status, 201)
  const discoveries = oidc.requestCount('/.well-known/openid-configuration')

  oidc.failWith(500)
  clock += 3_600_000
  t.equal(
    (await call(relay, 'POST', '/admin/sessions', bearer(unseen))).status,
    201,
    'a token first seen now, checked against the last good keys',
  )
  t.equal((await call(relay, 'POST', '/admin/sessions', bearer(seen))).status, 201, 'a token seen before')
  t.equal(oidc.requestCount('/.well-known/openid-configuration'), discoveries + 1, 'one refresh was attempted')
  const warning = relay.logs.find((l) => /keeping the last good signing keys/.test(String(l.msg)))
  t.equal(warning?.level, 40, 'a warning says so')

  oidc.failWith(null)
  clock += 60_000 // the floor: the next attempt
  t.equal((await call(relay, 'POST', '/admin/sessions', bearer(seen))).status, 201)
  t.ok(
    relay.logs.some((l) => l.level === 30 && /reachable again/.test(String(l.msg))),
    'the recovery is logged',
  )
  noTokenLogged(t, relay, [seen, unseen])
})

t.test('discovery document', async (t) => {
  const oidc = await provider(t)
  const relay = await startTestRelay(t, [...authFlags(oidc.issuer), '--oidc-client-id', 'relay-cli'])
  const own = (await (await fetch(oidc.discoveryUrl)).json()) as Record<string, string>
  t.ok(own.device_authorization_endpoint, 'precondition: the provider advertises device flow')
  const response = await fetch(`${relay.http}/.well-known/relay-config`)
  t.equal(response.status, 200)
  t.match(response.headers.get('content-type'), /^application\/json/)
  t.equal(response.headers.get('cache-control'), 'public, max-age=300')
  t.same(await response.json(), {
    issuer: oidc.issuer,
    audience: AUDIENCE,
    scopes: [CREATE, READ, DELETE],
    authorization_endpoint: own.authorization_endpoint,
    token_endpoint: own.token_endpoint,
    device_authorization_endpoint: own.device_authorization_endpoint,
    client_id_hint: 'relay-cli',
  })

  const noDevice = await provider(t, { deviceFlow: false })
  const bare = await startTestRelay(t, ['--oidc-issuer', noDevice.issuer])
  const theirs = (await (await fetch(noDevice.discoveryUrl)).json()) as Record<string, string>
  t.same(
    await (await fetch(`${bare.http}/.well-known/relay-config`)).json(),
    {
      issuer: noDevice.issuer,
      audience: '',
      scopes: [CREATE, READ, DELETE],
      authorization_endpoint: theirs.authorization_endpoint,
      token_endpoint: theirs.token_endpoint,
      device_authorization_endpoint: '',
      client_id_hint: '',
    },
    'no device flow, no audience, no client id: empty strings',
  )

  const disabled = await startTestRelay(t, ['--no-auth'])
  const notFound = await fetch(`${disabled.http}/.well-known/relay-config`)
  t.equal(notFound.status, 404, 'auth disabled')
  t.equal(notFound.headers.get('content-type'), 'text/plain; charset=utf-8')
  t.match(await notFound.text(), /auth is disabled/)
})

t.test('an empty audience setting disables the audience check', async (t) => {
  const oidc = await provider(t, { audiences: [AUDIENCE, OTHER_AUDIENCE] })
  const strict = await startTestRelay(t, authFlags(oidc.issuer))
  const lax = await startTestRelay(t, ['--oidc-issuer', oidc.issuer])
  const other = await oidc.token({ audience: OTHER_AUDIENCE })
  t.equal(
    (await call(strict, 'POST', '/admin/sessions', bearer(other))).status,
    401,
    'control: refused with an audience set',
  )
  t.equal((await call(lax, 'POST', '/admin/sessions', bearer(other))).status, 201, 'accepted without one')
  t.ok(
    lax.logs.some((l) => l.level === 40 && /oidc-audience/.test(String(l.msg))),
    'a warning says so at start',
  )
  t.notOk(
    strict.logs.some((l) => /oidc-audience/.test(String(l.msg))),
    'no such warning with an audience',
  )
})

t.test('auth disabled: a warning at start, admin routes need no token', async (t) => {
  const relay = await startTestRelay(t, ['--no-auth'])
  t.ok(
    relay.logs.some((l) => l.level === 40 && /auth is disabled/.test(String(l.msg))),
    'warning logged at start',
  )
  const created = await call(relay, 'POST', '/admin/sessions')
  t.equal(created.status, 201)
  const id = (created.body as { id: string }).id
  t.equal((await call(relay, 'GET', '/admin/sessions')).status, 200)
  t.equal((await call(relay, 'GET', `/admin/sessions/${id}`)).status, 200)
  t.equal((await call(relay, 'DELETE', `/admin/sessions/${id}`)).status, 204)
})

t.test('with auth on, admin JWTs and slot tokens do not stand in for each other', async (t) => {
  const oidc = await provider(t)
  const relay = await startTestRelay(t, authFlags(oidc.issuer))
  const jwt = await oidc.token()
  t.notOk(
    relay.logs.some((l) => /auth is disabled/.test(String(l.msg))),
    'no auth-disabled warning',
  )
  const created = await call(relay, 'POST', '/admin/sessions', bearer(jwt))
  t.equal(created.status, 201)
  const session = created.body as { id: string; initiator_token: string; responder_token: string }
  const url = `${relay.ws}/relay/${session.id}`

  const header = await refusalOf(attach(url, { token: jwt }))
  t.equal(header.status, 401, 'an admin JWT is not a slot token (Authorization header)')
  const query = await refusalOf(attach(url, { token: jwt, query: true }))
  t.equal(query.status, 401, 'an admin JWT is not a slot token (query)')
  const peer = await attach(url, { token: session.initiator_token })
  t.equal(peer.socket.readyState, peer.socket.OPEN, 'the slot token attaches')
  peer.socket.close(1000)

  const slotAsAdmin = await call(relay, 'GET', '/admin/sessions', bearer(session.responder_token))
  t.equal(slotAsAdmin.status, 401, 'a slot token grants no admin access')
  t.equal(slotAsAdmin.wwwAuthenticate, 'Bearer error="invalid_token"')
  noTokenLogged(t, relay, [jwt, session.initiator_token, session.responder_token])
})

// ---------------------------------------------------------------------------

type Call = { status: number; body: unknown; wwwAuthenticate: string | null }

/** One admin-style request; the body parsed as JSON when it is JSON. */
async function call(relay: TestRelay, method: string, path: string, authorization?: string): Promise<Call> {
  const response = await fetch(`${relay.http}${path}`, {
    method,
    headers: authorization === undefined ? {} : { authorization },
  })
  const text = await response.text()
  let body: unknown = text
  if (response.headers.get('content-type')?.startsWith('application/json') === true) body = JSON.parse(text)
  return { status: response.status, body, wwwAuthenticate: response.headers.get('www-authenticate') }
}

function bearer(token: string): string {
  return `Bearer ${token}`
}

function authFlags(issuer: string): string[] {
  return ['--oidc-issuer', issuer, '--oidc-audience', AUDIENCE]
}

/** A real provider, closed when the test ends. */
async function provider(t: Test, opts: OidcFixtureOptions = {}): Promise<OidcFixture> {
  const oidc = await startOidcProvider(opts)
  t.teardown(() => oidc.close())
  return oidc
}

function isErrorBody(body: unknown): boolean {
  return (
    typeof body === 'object' &&
    body !== null &&
    Object.keys(body).join() === 'error' &&
    typeof (body as { error: unknown }).error === 'string' &&
    (body as { error: string }).error !== ''
  )
}

function scopesOf(token: string): string {
  const scope = decodeJwt(token).scope
  return typeof scope === 'string' ? scope : ''
}

function noTokenLogged(t: Test, relay: TestRelay, tokens: string[]): void {
  const logs = relay.logText()
  t.ok(logs.length > 0, 'the relay logged something')
  for (const token of tokens) {
    // The signature part alone is unique to each token and never legitimately logged.
    const signature = token.split('.')[2] || token
    t.notOk(logs.includes(token) || logs.includes(signature), `token ${token.slice(-8)} not in the logs`)
  }
}

function b64json(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url')
}

/** The provider's signing key as PEM, what an attacker would use as an HMAC secret. */
async function publicKeyPem(jwksUri: string): Promise<string> {
  const { keys } = (await (await fetch(jwksUri)).json()) as { keys: JsonWebKey[] }
  return createPublicKey({ key: keys[0] as JsonWebKey, format: 'jwk' })
    .export({ type: 'spki', format: 'pem' })
    .toString()
}

type MiniIssuer = {
  issuer: string
  kid: string
  publicJwk: JWK
  /** A token signed with a key the issuer publishes; claims default to a valid admin token. */
  sign(claims: JWTPayload, alg?: 'RS256' | 'PS256'): Promise<string>
}

/**
 * A minimal OpenID issuer: a discovery document and a JWKS, nothing else. For tokens the
 * real provider cannot be made to issue (scp, nbf, odd claims), signed by a trusted key.
 */
async function miniIssuer(t: Test): Promise<MiniIssuer> {
  const kid = randomUUID()
  const { publicKey, privateKey } = await generateKeyPair('RS256', { extractable: true })
  // No `alg` on the published key: the same RSA key verifies RS256 and PS256.
  const publicJwk = { ...(await exportJWK(publicKey)), kid, use: 'sig' }
  const privateJwk = await exportJWK(privateKey)
  let issuer = ''
  const server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://mini').pathname
    res.setHeader('content-type', 'application/json')
    if (path === '/.well-known/openid-configuration') {
      res.end(
        JSON.stringify({
          issuer,
          jwks_uri: `${issuer}/jwks`,
          authorization_endpoint: `${issuer}/auth`,
          token_endpoint: `${issuer}/token`,
        }),
      )
    } else if (path === '/jwks') {
      res.end(JSON.stringify({ keys: [publicJwk] }))
    } else {
      res.statusCode = 404
      res.end('{}')
    }
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  )
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`

  async function sign(claims: JWTPayload, alg: 'RS256' | 'PS256' = 'RS256'): Promise<string> {
    const now = Math.floor(Date.now() / 1000)
    const payload: JWTPayload = { iss: issuer, aud: AUDIENCE, sub: 'mini', iat: now, exp: now + 300, ...claims }
    for (const key of Object.keys(payload)) if (payload[key] === undefined) delete payload[key]
    return await new SignJWT(payload)
      .setProtectedHeader({ alg, kid, typ: 'at+jwt' })
      .sign(await importJWK(privateJwk, alg))
  }
  return { issuer, kid, publicJwk, sign }
}
