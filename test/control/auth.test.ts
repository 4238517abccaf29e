// Authentication with real id tokens from a real OpenID provider (oidc-provider, on loopback):
// which tokens pass, which get 401 and why, the optional required claim (403), the public
// routes, the provider being down, the skip-auth mode, and tokens never reaching the logs.
import t from 'tap'
import type { Test } from 'tap'
import { decodeJwt, decodeProtectedHeader } from 'jose'
import { createLogger } from '@session-relay/control/logger'
import { startOidcProvider } from '../fixtures/oidc-provider.js'
import type { OidcFixture, OidcFixtureOptions } from '../fixtures/oidc-provider.js'
import { createApp, isErrorBody, startTestControl, until } from '../helpers/control.js'
import type { TestControl } from '../helpers/control.js'

// Auth does not depend on the database engine, so these run on PGlite only.
const ENGINE = 'pglite'

async function provider(t: Test, opts: OidcFixtureOptions = {}): Promise<OidcFixture> {
  const oidc = await startOidcProvider(opts)
  t.teardown(() => oidc.close())
  return oidc
}

function authFlags(oidc: OidcFixture, ...extra: string[]): string[] {
  return ['--oidc-issuer', oidc.issuer, '--oidc-audience', oidc.clientId, ...extra]
}

function noTokenLogged(t: Test, control: TestControl, tokens: string[]): void {
  const logs = control.logText()
  t.ok(logs.length > 0, 'the control plane logged something')
  for (const token of tokens) {
    const signature = token.split('.')[2] || token
    t.notOk(logs.includes(token) || logs.includes(signature), `token …${token.slice(-8)} is not in the logs`)
  }
}

t.test('a valid id token from the provider opens the API', async (t) => {
  const oidc = await provider(t)
  const control = await startTestControl(t, ENGINE, authFlags(oidc))
  const token = await oidc.idToken({ claims: { email: 'dev@example.com' } })
  const claims = decodeJwt(token)
  t.equal(claims.aud, oidc.clientId, 'precondition: an id token, issued to the client')
  t.equal(claims.iss, oidc.issuer)

  const created = await control.call('POST', '/applications', {
    token,
    json: { name: 'shop', language: 'go', runtime: 'wasmkube' },
  })
  t.equal(created.status, 201, 'create with the token')
  t.equal((await control.call('GET', '/applications', { token })).status, 200, 'list with the token')
  t.equal(
    (await control.call('GET', '/applications', { headers: { authorization: `bearer   ${token}` } })).status,
    200,
    'the scheme is case-insensitive',
  )
  t.notOk(
    control.logs.some((l) => /AUTHENTICATION IS OFF/.test(String(l.msg))),
    'no skip-auth warning',
  )
  t.notOk(
    control.logs.some((l) => /oidc-audience/.test(String(l.msg))),
    'no missing-audience warning',
  )
  noTokenLogged(t, control, [token])
})

t.test('missing, malformed and unacceptable tokens: 401 {error} with a Bearer challenge', async (t) => {
  const oidc = await provider(t, { idTokenTtlSeconds: 2 })
  const stranger = await provider(t)
  // The control plane's clock is injected: moved past the token's exp below instead of waiting.
  let clock = Date.now()
  const control = await startTestControl(t, ENGINE, authFlags(oidc), { deps: { auth: { now: () => clock } } })
  const good = await oidc.idToken()
  t.equal(
    (await control.call('GET', '/applications', { token: good })).status,
    200,
    'control: the fresh token is accepted',
  )

  const [header, payload, signature] = good.split('.') as [string, string, string]
  const tampered = `${header}.${payload}.${signature.slice(0, -4)}${signature.slice(-4) === 'AAAA' ? 'BBBB' : 'AAAA'}`
  const forgedPayload = Buffer.from(JSON.stringify({ ...decodeJwt(good), sub: 'admin' })).toString('base64url')
  const cases: Array<[string, string | undefined, string]> = [
    ['no Authorization header', undefined, 'missing bearer token'],
    ['Basic credentials', 'Basic dXNlcjpwYXNz', 'malformed authorization header'],
    ['Bearer and nothing else', 'Bearer', 'malformed authorization header'],
    ['not a JWT', 'Bearer abc.def', 'malformed token'],
    ['a tampered signature', `Bearer ${tampered}`, 'invalid token signature'],
    ['a changed payload', `Bearer ${header}.${forgedPayload}.${signature}`, 'invalid token signature'],
    ['an id token of another provider', `Bearer ${await stranger.idToken()}`, 'token signing key unknown'],
    [
      'an access token of the same provider (another audience)',
      `Bearer ${await oidc.token()}`,
      'token audience not accepted',
    ],
  ]
  for (const [what, authorization, reason] of cases) {
    const reply = await control.call(
      'GET',
      '/applications',
      authorization === undefined ? {} : { headers: { authorization } },
    )
    t.equal(reply.status, 401, what)
    t.same(reply.body, { error: reason }, `${what}: says why`)
    t.equal(
      reply.headers.get('www-authenticate'),
      authorization === undefined ? 'Bearer' : 'Bearer error="invalid_token"',
      `${what}: the challenge (no error code without credentials, RFC 6750)`,
    )
  }

  clock = (decodeJwt(good).exp as number) * 1000 + 1_000
  const expired = await control.call('GET', '/applications', { token: good })
  t.equal(expired.status, 401, 'the same token once expired')
  t.same(expired.body, { error: 'token expired' })
  noTokenLogged(t, control, [good, tampered])
})

t.test('the audience is the OAuth client id: tokens issued to another client are refused', async (t) => {
  const oidc = await provider(t)
  const strict = await startTestControl(t, ENGINE, ['--oidc-issuer', oidc.issuer, '--oidc-audience', 'another-client'])
  const lax = await startTestControl(t, ENGINE, ['--oidc-issuer', oidc.issuer])
  const token = await oidc.idToken()
  const refused = await strict.call('GET', '/applications', { token })
  t.equal(refused.status, 401, 'aud is not the configured client id')
  t.same(refused.body, { error: 'token audience not accepted' })
  t.equal(
    (await lax.call('GET', '/applications', { token })).status,
    200,
    'no audience configured: any client of the issuer',
  )
  t.ok(
    lax.logs.some((l) => l.level === 40 && /no --oidc-audience/.test(String(l.msg))),
    'which is logged as a warning at start',
  )
})

t.test('a required claim: 403 {error} when the token lacks it, in a string or an array claim', async (t) => {
  const oidc = await provider(t)
  const groups = await startTestControl(t, ENGINE, authFlags(oidc, '--required-claim', 'groups=platform-admins'))
  const roles = await startTestControl(t, ENGINE, authFlags(oidc, '--required-claim', 'roles=admin'))
  const tokens = {
    admins: await oidc.idToken({ claims: { groups: ['developers', 'platform-admins'] } }),
    developers: await oidc.idToken({ claims: { groups: ['developers'] } }),
    none: await oidc.idToken(),
    groupString: await oidc.idToken({ claims: { groups: 'platform-admins' } }),
    near: await oidc.idToken({ claims: { groups: ['platform-admins-2', 'Platform-Admins'] } }),
    adminRole: await oidc.idToken({ claims: { roles: 'admin' } }),
    adminInRoles: await oidc.idToken({ claims: { roles: ['viewer', 'admin'] } }),
  }
  t.equal((await groups.call('GET', '/applications', { token: tokens.admins })).status, 200, 'a member of the group')
  t.equal(
    (await groups.call('GET', '/applications', { token: tokens.groupString })).status,
    200,
    'the claim as a plain string',
  )
  for (const [what, token] of [
    ['another group', tokens.developers],
    ['no groups claim', tokens.none],
    ['only near misses', tokens.near],
    ['a role instead', tokens.adminRole],
  ] as const) {
    const reply = await groups.call('GET', '/applications', { token })
    t.equal(reply.status, 403, what)
    t.same(reply.body, { error: 'token lacks the required claim groups=platform-admins' }, `${what}: says which claim`)
    t.equal(reply.headers.get('www-authenticate'), 'Bearer error="insufficient_scope"')
  }
  const forbiddenCreate = await groups.call('POST', '/applications', {
    token: tokens.developers,
    json: { name: 'x', language: 'go', runtime: 'wasmkube' },
  })
  t.equal(forbiddenCreate.status, 403, 'a create without the claim')
  t.same((await groups.call('GET', '/applications', { token: tokens.admins })).body, [], 'created nothing')
  t.equal(
    (await roles.call('GET', '/applications', { token: tokens.adminRole })).status,
    200,
    'roles=admin, string claim',
  )
  t.equal(
    (await roles.call('GET', '/applications', { token: tokens.adminInRoles })).status,
    200,
    'roles=admin, array claim',
  )
  t.equal(
    (await roles.call('GET', '/applications', { token: tokens.admins })).status,
    403,
    'groups do not stand in for roles',
  )
})

t.test(
  'every /api/v1 route but the OpenAPI document needs a token; /healthz, /readyz and /metrics are public',
  async (t) => {
    const oidc = await provider(t)
    const control = await startTestControl(t, ENGINE, authFlags(oidc))
    t.equal((await control.call('GET', '/healthz')).status, 200, '/healthz')
    t.equal((await fetch(`${control.url}/metrics`)).status, 200, '/metrics, for Prometheus')
    t.equal((await fetch(`${control.url}/readyz`)).status, 200, '/readyz, for the readiness probe')
    const openapi = await control.call('GET', '/openapi.json')
    t.equal(openapi.status, 200, '/api/v1/openapi.json')
    const paths = (openapi.body as { paths: Record<string, Record<string, unknown>> }).paths
    let checked = 0
    for (const [path, methods] of Object.entries(paths)) {
      if (
        path === '/healthz' ||
        path === '/readyz' ||
        path === '/metrics' ||
        path === '/api/v1/openapi.json' ||
        path === '/api/v1/console-config'
      )
        continue
      const concrete = path.replace('/api/v1', '').replace(/\{[^}]+\}/g, '00000000-0000-4000-8000-000000000000')
      for (const method of Object.keys(methods)) {
        const reply = await control.call(
          method.toUpperCase(),
          concrete,
          method === 'get' || method === 'delete' ? {} : { json: {} },
        )
        t.equal(reply.status, 401, `${method.toUpperCase()} ${path} without a token`)
        t.ok(isErrorBody(reply.body), `${method.toUpperCase()} ${path}: {error}`)
        checked++
      }
    }
    t.ok(checked >= 20, `checked ${checked} routes`)

    // Authentication comes before the body is read: an anonymous upload is refused, not parsed.
    const anonymous = await control.call('POST', `/applications/x/functions/y/source.tar.gz`, {
      body: Buffer.alloc(16 * 1024 * 1024),
      headers: { 'content-type': 'application/gzip' },
    })
    t.equal(anonymous.status, 401, 'an anonymous 16 MiB upload: 401, not 413')
  },
)

t.test('provider down at start: 503 until it is reachable, then tokens work without a restart', async (t) => {
  const oidc = await provider(t)
  const token = await oidc.idToken()
  await oidc.stop()
  const control = await startTestControl(t, ENGINE, authFlags(oidc), {
    deps: { auth: { retryMs: 100, refreshCooldownMs: 100, fetchTimeoutMs: 1_000 } },
  })
  const down = await control.call('GET', '/applications', { token })
  t.equal(down.status, 503)
  t.same(down.body, { error: 'identity provider unavailable' })
  t.equal(down.headers.get('retry-after'), '5')
  t.equal((await control.call('GET', '/healthz')).status, 200, '/healthz still answers')
  t.ok(
    control.logs.some((l) => l.level === 40 && /identity provider unavailable/.test(String(l.msg))),
    'a warning is logged',
  )

  await oidc.start()
  await until(
    async () => (await control.call('GET', '/applications', { token })).status === 200,
    5_000,
    'the token to be accepted',
  )
  t.pass('accepted once the provider is back')
  t.ok(
    control.logs.some((l) => /reachable again/.test(String(l.msg))),
    'the recovery is logged',
  )
})

t.test('a token without exp, signed by a key of the issuer: 401 {error} saying so', async (t) => {
  const oidc = await provider(t)
  const control = await startTestControl(t, ENGINE, authFlags(oidc))
  const now = Math.floor(Date.now() / 1000)
  const claims = { iss: oidc.issuer, aud: oidc.clientId, sub: 'someone', iat: now }
  const withExp = await oidc.sign({ ...claims, exp: now + 300 })
  t.equal(
    (await control.call('GET', '/applications', { token: withExp })).status,
    200,
    'control: the same claims with exp pass',
  )
  const noExp = await oidc.sign(claims)
  const reply = await control.call('GET', '/applications', { token: noExp })
  t.equal(reply.status, 401)
  t.same(reply.body, { error: 'token has no exp claim' })
  t.equal(reply.headers.get('www-authenticate'), 'Bearer error="invalid_token"')
  noTokenLogged(t, control, [withExp, noExp])
})

t.test(
  'a key the provider withdraws stops validating once the key set is due (1h by default), without restart',
  async (t) => {
    const oidc = await provider(t)
    let clock = 0
    const control = await startTestControl(t, ENGINE, authFlags(oidc), { deps: { auth: { now: () => clock } } })
    const old = await oidc.idToken()
    t.equal((await control.call('GET', '/applications', { token: old })).status, 200)

    await oidc.rotateKeys({ keepOld: true })
    const fresh = await oidc.idToken()
    t.not(decodeProtectedHeader(fresh).kid, decodeProtectedHeader(old).kid, 'the provider signs with a new kid')
    clock += 5_000 // past the unknown-kid cooldown the start-up fetch began
    t.equal((await control.call('GET', '/applications', { token: fresh })).status, 200, 'the new key validates')
    const fetched = oidc.requestCount('/jwks')

    await oidc.dropOldKeys()
    clock += 3_600_000 - 1
    t.equal(
      (await control.call('GET', '/applications', { token: old })).status,
      200,
      'the removed key, before the keys are due',
    )
    t.equal(oidc.requestCount('/jwks'), fetched, 'no fetch before then')
    clock += 1
    const refused = await control.call('GET', '/applications', { token: old })
    t.equal(refused.status, 401, 'the removed key, once they are due')
    t.same(refused.body, { error: 'token signing key unknown' })
    t.equal(refused.headers.get('www-authenticate'), 'Bearer error="invalid_token"')
    t.equal(oidc.requestCount('/jwks'), fetched + 1, 'one fetch')
    t.equal((await control.call('GET', '/applications', { token: fresh })).status, 200, 'the new key still validates')
    noTokenLogged(t, control, [old, fresh])
  },
)

t.test('provider answering 500 when the keys are due: the last good keys keep validating', async (t) => {
  const oidc = await provider(t)
  let clock = 0
  const control = await startTestControl(t, ENGINE, authFlags(oidc), { deps: { auth: { now: () => clock } } })
  const seen = await oidc.idToken()
  const unseen = await oidc.idToken()
  t.equal((await control.call('GET', '/applications', { token: seen })).status, 200)
  const discoveries = oidc.requestCount('/.well-known/openid-configuration')

  oidc.failWith(500)
  clock += 3_600_000
  t.equal(
    (await control.call('GET', '/applications', { token: unseen })).status,
    200,
    'a token first seen now, checked against the last good keys',
  )
  t.equal((await control.call('GET', '/applications', { token: seen })).status, 200, 'a token seen before')
  t.equal(oidc.requestCount('/.well-known/openid-configuration'), discoveries + 1, 'one refresh was attempted')
  const warning = control.logs.find((l) => /keeping the last good signing keys/.test(String(l.msg)))
  t.equal(warning?.level, 40, 'a warning says so')
  noTokenLogged(t, control, [seen, unseen])
})

t.test('skip-auth: a loud warning at start, and no token needed', async (t) => {
  const control = await startTestControl(t, ENGINE, ['--dev-insecure-skip-auth'])
  const warning = control.logs.find((l) => /AUTHENTICATION IS OFF/.test(String(l.msg)))
  t.ok(warning, 'a warning at start')
  t.equal(warning?.level, 40, 'at warn level')
  t.match(String(warning?.msg), /PLATFORM_DEV_INSECURE_SKIP_AUTH/, 'naming the setting')
  await createApp(control)
  t.equal((await control.call('GET', '/applications')).status, 200, 'no token')
  t.equal(
    (await control.call('GET', '/applications', { headers: { authorization: 'Bearer garbage' } })).status,
    200,
    'a bad token is ignored',
  )

  const oidc = await provider(t)
  const both = await startTestControl(t, ENGINE, [...authFlags(oidc), '--dev-insecure-skip-auth'])
  t.equal((await both.call('GET', '/applications')).status, 200, 'skip-auth wins over a configured issuer')
  t.equal(oidc.requestCount('/.well-known/openid-configuration'), 0, 'and the provider is never contacted')
})

t.test('the logger redacts authorization headers, should a log line ever carry them', async (t) => {
  const lines: string[] = []
  const logger = createLogger('info', {
    write: (line: string) => {
      lines.push(line)
    },
  })
  logger.info({ headers: { authorization: 'Bearer secret-1' } }, 'headers')
  logger.info({ req: { headers: { authorization: 'Bearer secret-2' } } }, 'request')
  logger.info({ authorization: 'Bearer secret-3', token: 'secret-4' }, 'bare')
  const text = lines.join('')
  t.notMatch(text, /secret-/, 'no credential in the output')
  t.equal(text.match(/\[redacted\]/g)?.length, 4, 'each replaced by [redacted]')
})
