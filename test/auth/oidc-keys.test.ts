// The key set and verified-token cache shared by both processes: a token's signature is checked
// once and the token is trusted until it expires, never past it, never for another audience, and
// not after the keys change; the keys are refetched on the provider's max-age within a floor and
// a ceiling, the last good ones kept while it fails; a token without exp is refused.
import { randomUUID } from 'node:crypto'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import type { Test } from 'tap'
import { SignJWT, decodeJwt, exportJWK, generateKeyPair } from 'jose'
import type { JWTPayload } from 'jose'
import { createOidcKeys } from '@session-relay/auth/oidc-keys'
import { TokenRejectedError } from '@session-relay/auth/token-errors'
import { verifyBearer } from '@session-relay/auth/verify-bearer'
import type { OidcKeys } from '@session-relay/auth/oidc-keys'
import { startOidcProvider } from '../fixtures/oidc-provider.js'

const AUDIENCE = 'https://relay.test'
const quiet = { info() {}, warn() {} }

/** The same keys, counting how often a signature had to be checked. */
function counting(keys: OidcKeys): { keys: OidcKeys; checks: () => number } {
  let checks = 0
  return {
    keys: {
      ...keys,
      getKey: (header, token) => {
        checks++
        return keys.getKey(header, token)
      },
    },
    checks: () => checks,
  }
}

t.test('a verified token is checked once, then trusted until it expires', async (t) => {
  const oidc = await startOidcProvider({ accessTokenTtlSeconds: 2 })
  t.teardown(() => oidc.close())
  let clock = Date.now()
  const base = createOidcKeys({ issuer: oidc.issuer, logger: quiet, now: () => clock })
  t.teardown(() => base.close())
  const { keys, checks } = counting(base)
  const token = await oidc.token()
  const header = `Bearer ${token}`

  const first = await verifyBearer(keys, header, AUDIENCE)
  for (let i = 0; i < 50; i++) t.same(await verifyBearer(keys, header, AUDIENCE), first)
  t.equal(checks(), 1, '51 requests, one signature check')

  await t.rejects(
    verifyBearer(keys, header, 'https://other.test'),
    TokenRejectedError,
    'another audience is checked afresh, and refused',
  )
  t.equal(checks(), 2)

  clock = (decodeJwt(token).exp as number) * 1000 + 1_000
  await t.rejects(verifyBearer(keys, header, AUDIENCE), { message: 'token expired' }, 'never trusted past its expiry')
})

t.test('bad tokens are never cached, and a key refresh forgets every verified token', async (t) => {
  const oidc = await startOidcProvider()
  t.teardown(() => oidc.close())
  const base = createOidcKeys({ issuer: oidc.issuer, logger: quiet, refreshCooldownMs: 0 })
  t.teardown(() => base.close())
  const { keys, checks } = counting(base)
  const token = await oidc.token()
  const [h, p, sig] = token.split('.') as [string, string, string]
  const tampered = `Bearer ${h}.${p}.${sig.slice(0, 10)}${sig[10] === 'A' ? 'B' : 'A'}${sig.slice(11)}`
  for (let i = 0; i < 3; i++) await t.rejects(verifyBearer(keys, tampered, AUDIENCE), TokenRejectedError)
  t.equal(checks(), 3, 'a refused token is checked every time')

  await verifyBearer(keys, `Bearer ${token}`, AUDIENCE)
  t.equal(keys.verified.size, 1)
  await oidc.rotateKeys()
  await verifyBearer(keys, `Bearer ${await oidc.token()}`, AUDIENCE) // an unknown kid: the keys are refreshed
  t.notOk(keys.verified.has(token), 'the token verified under the old keys is forgotten')
})

t.test('the key set is refetched when its max-age has passed, clamped to the floor and the ceiling', async (t) => {
  const floor = 60_000
  const ceiling = 3_600_000
  const cases: Array<[string, Record<string, string>, number]> = [
    ['max-age below the floor', { 'cache-control': 'public, max-age=1' }, floor],
    ['max-age above the ceiling', { 'cache-control': 'max-age=86400' }, ceiling],
    ['max-age between them', { 'cache-control': 'max-age=120, must-revalidate' }, 120_000],
    ['max-age less the Age a cache added', { 'cache-control': 'max-age=300', age: '100' }, 200_000],
    ['no-store', { 'cache-control': 'no-store' }, floor],
    ['no Cache-Control at all', {}, ceiling],
  ]
  for (const [what, headers, expected] of cases) {
    const idp = await localIssuer(t, headers)
    let clock = 1_000_000
    const keys = createOidcKeys({
      issuer: idp.issuer,
      logger: quiet,
      minRefreshMs: floor,
      maxRefreshMs: ceiling,
      now: () => clock,
    })
    t.teardown(() => keys.close())
    const header = `Bearer ${await idp.sign({})}`
    await verifyBearer(keys, header, AUDIENCE)
    t.equal(idp.jwksFetches(), 1, `${what}: the start-up fetch`)
    clock += expected - 1
    await verifyBearer(keys, header, AUDIENCE)
    t.equal(idp.jwksFetches(), 1, `${what}: not refetched before ${expected} ms`)
    clock += 1
    await verifyBearer(keys, header, AUDIENCE)
    t.equal(idp.jwksFetches(), 2, `${what}: refetched at ${expected} ms`)
    t.equal(keys.verified.size, 1, `${what}: the token was checked again against the new set and kept`)
  }
})

t.test('a failed refresh keeps the last good keys and is tried again a floor later, not per request', async (t) => {
  const idp = await localIssuer(t, { 'cache-control': 'max-age=600' })
  let clock = 0
  const warnings: string[] = []
  const logger = {
    info() {},
    warn(_details: object, message: string) {
      warnings.push(message)
    },
  }
  const keys = createOidcKeys({
    issuer: idp.issuer,
    logger,
    minRefreshMs: 60_000,
    maxRefreshMs: 3_600_000,
    now: () => clock,
  })
  t.teardown(() => keys.close())
  const seen = `Bearer ${await idp.sign({})}`
  await verifyBearer(keys, seen, AUDIENCE)

  idp.failWith(500)
  clock += 600_000
  t.equal(
    (await verifyBearer(keys, `Bearer ${await idp.sign({ sub: 'unseen' })}`, AUDIENCE)).sub,
    'unseen',
    'a token never seen before is checked against the last good keys',
  )
  t.equal((await verifyBearer(keys, seen, AUDIENCE)).sub, 'mini', 'and a verified one stays verified')
  t.equal(idp.discoveryFetches(), 2, 'one refresh was attempted')
  t.same(warnings, ['identity provider unavailable; keeping the last good signing keys'])
  for (let i = 0; i < 10; i++) await verifyBearer(keys, `Bearer ${await idp.sign({ sub: `n${i}` })}`, AUDIENCE)
  t.equal(idp.discoveryFetches(), 2, 'no attempt per request while it fails')
  clock += 60_000
  await verifyBearer(keys, seen, AUDIENCE)
  t.equal(idp.discoveryFetches(), 3, 'another a floor later')

  idp.failWith(null)
  clock += 60_000
  await verifyBearer(keys, seen, AUDIENCE)
  t.equal(idp.jwksFetches(), 2, 'the keys are fetched again once the provider answers')
})

t.test('a token without exp is refused, however well signed', async (t) => {
  const idp = await localIssuer(t, {})
  const keys = createOidcKeys({ issuer: idp.issuer, logger: quiet })
  t.teardown(() => keys.close())
  t.equal(
    (await verifyBearer(keys, `Bearer ${await idp.sign({})}`, AUDIENCE)).sub,
    'mini',
    'control: with exp it passes',
  )
  await t.rejects(verifyBearer(keys, `Bearer ${await idp.sign({ exp: undefined })}`, AUDIENCE), {
    name: 'TokenRejectedError',
    message: 'token has no exp claim',
  })
  await t.rejects(
    verifyBearer(keys, `Bearer ${await idp.sign({ exp: 'tomorrow' as unknown as number })}`, AUDIENCE),
    { name: 'TokenRejectedError', message: 'invalid token claims' },
    'an exp that is no number is no expiry either',
  )
})

type LocalIssuer = {
  issuer: string
  /** A token signed by the published key: a valid one (exp in 5 min) unless claims say otherwise; undefined drops a claim. */
  sign(claims: JWTPayload): Promise<string>
  jwksFetches(): number
  discoveryFetches(): number
  failWith(status: number | null): void
}

/** A discovery document and a JWKS served with the given response headers, nothing else. */
async function localIssuer(t: Test, jwksHeaders: Record<string, string>): Promise<LocalIssuer> {
  const kid = randomUUID()
  const { publicKey, privateKey } = await generateKeyPair('RS256')
  const publicJwk = { ...(await exportJWK(publicKey)), kid, use: 'sig', alg: 'RS256' }
  const counts = { jwks: 0, discovery: 0 }
  let failing: number | null = null
  let issuer = ''
  const server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://local').pathname
    if (path === '/jwks') counts.jwks++
    if (path === '/.well-known/openid-configuration') counts.discovery++
    res.shouldKeepAlive = false
    if (failing !== null) {
      res.writeHead(failing).end()
    } else if (path === '/.well-known/openid-configuration') {
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ issuer, jwks_uri: `${issuer}/jwks` }))
    } else if (path === '/jwks') {
      res
        .writeHead(200, { 'content-type': 'application/json', ...jwksHeaders })
        .end(JSON.stringify({ keys: [publicJwk] }))
    } else {
      res.writeHead(404).end()
    }
  })
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  )
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    issuer,
    async sign(claims) {
      const now = Math.floor(Date.now() / 1000)
      const payload: JWTPayload = { iss: issuer, aud: AUDIENCE, sub: 'mini', iat: now, exp: now + 300, ...claims }
      for (const key of Object.keys(payload)) if (payload[key] === undefined) delete payload[key]
      return await new SignJWT(payload).setProtectedHeader({ alg: 'RS256', kid }).sign(privateKey)
    },
    jwksFetches: () => counts.jwks,
    discoveryFetches: () => counts.discovery,
    failWith: (status) => {
      failing = status
    },
  }
}
