import t from 'tap'
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from 'jose'
import { startOidcProvider } from '../fixtures/oidc-provider.js'

type Discovery = {
  issuer: string
  jwks_uri: string
  token_endpoint: string
  grant_types_supported: string[]
  device_authorization_endpoint?: string
}

async function getJson<T>(url: string): Promise<T> {
  const res = await fetch(url)
  if (!res.ok) throw new Error(`${url}: ${res.status}`)
  return (await res.json()) as T
}

async function kids(jwksUri: string) {
  const { keys } = await getJson<{ keys: { kid: string }[] }>(jwksUri)
  return keys.map((k) => k.kid)
}

// undici wraps the socket error; the code is what tells refused from other failures
async function fetchErrorCode(url: string) {
  try {
    await fetch(url)
    return 'connected'
  } catch (err) {
    return (err as { cause?: { code?: string } }).cause?.code
  }
}

t.test('discovery and verifiable JWT access tokens', async (t) => {
  const idp = await startOidcProvider({ audiences: ['https://relay.test', 'https://other.test'] })
  t.teardown(() => idp.close())

  t.match(idp.issuer, /^http:\/\/127\.0\.0\.1:\d+$/)
  const discovery = await getJson<Discovery>(idp.discoveryUrl)
  t.equal(discovery.issuer, idp.issuer)
  t.equal(discovery.jwks_uri, idp.jwksUri)
  t.equal(discovery.token_endpoint, `${idp.issuer}/token`)
  t.equal(discovery.device_authorization_endpoint, `${idp.issuer}/device/auth`)
  t.ok(discovery.grant_types_supported.includes('client_credentials'))
  t.ok(discovery.grant_types_supported.includes('urn:ietf:params:oauth:grant-type:device_code'))

  const jwks = createRemoteJWKSet(new URL(idp.jwksUri))

  const token = await idp.token({ scopes: ['relay:session:read'], audience: 'https://other.test' })
  const { payload, protectedHeader } = await jwtVerify(token, jwks, {
    issuer: idp.issuer,
    audience: 'https://other.test',
    typ: 'at+jwt',
  })
  t.equal(protectedHeader.alg, 'RS256')
  t.type(protectedHeader.kid, 'string')
  t.equal(payload.scope, 'relay:session:read')
  t.equal(payload.aud, 'https://other.test')
  t.equal(payload.client_id, 'relay-test-client')
  t.equal(payload.sub, 'relay-test-client')
  t.equal((payload.exp ?? 0) - (payload.iat ?? 0), 600)

  const defaults = await jwtVerify(await idp.token(), jwks, { issuer: idp.issuer, audience: 'https://relay.test' })
  t.equal(defaults.payload.scope, 'relay:session:create relay:session:read relay:session:delete')

  const unscoped = await jwtVerify(await idp.token({ scopes: [] }), jwks, { issuer: idp.issuer })
  t.equal(unscoped.payload.scope, undefined)

  await t.rejects(idp.token({ audience: 'https://unknown.test' }), /invalid_target/)
})

t.test('options: scopes, audiences and token lifetime', async (t) => {
  const idp = await startOidcProvider({ scopes: ['a', 'b'], audiences: ['https://x.test'], accessTokenTtlSeconds: 30 })
  t.teardown(() => idp.close())
  const { payload } = await jwtVerify(await idp.token(), createRemoteJWKSet(new URL(idp.jwksUri)), {
    issuer: idp.issuer,
    audience: 'https://x.test',
  })
  t.equal(payload.scope, 'a b')
  t.equal((payload.exp ?? 0) - (payload.iat ?? 0), 30)
})

t.test('key rotation', async (t) => {
  const idp = await startOidcProvider()
  t.teardown(() => idp.close())
  const verify = (token: string) =>
    jwtVerify(token, createRemoteJWKSet(new URL(idp.jwksUri)), { issuer: idp.issuer, audience: 'https://relay.test' })

  const first = await idp.token()
  const firstKid = decodeProtectedHeader(first).kid
  t.same(await kids(idp.jwksUri), [firstKid])

  await idp.rotateKeys({ keepOld: true })
  const second = await idp.token()
  const secondKid = decodeProtectedHeader(second).kid
  t.not(secondKid, firstKid)
  t.same((await kids(idp.jwksUri)).sort(), [firstKid, secondKid].sort())
  await verify(first)
  await verify(second)

  await idp.rotateKeys()
  const third = await idp.token()
  const thirdKid = decodeProtectedHeader(third).kid
  t.not(thirdKid, secondKid)
  t.same(await kids(idp.jwksUri), [thirdKid])
  await verify(third)
  await t.rejects(verify(first), { code: 'ERR_JWKS_NO_MATCHING_KEY' })
  await t.rejects(verify(second), { code: 'ERR_JWKS_NO_MATCHING_KEY' })
})

t.test('deviceFlow false leaves the device endpoint out of discovery', async (t) => {
  const idp = await startOidcProvider({ deviceFlow: false })
  t.teardown(() => idp.close())
  const discovery = await getJson<Discovery>(idp.discoveryUrl)
  t.notOk('device_authorization_endpoint' in discovery)
  t.notOk(discovery.grant_types_supported.includes('urn:ietf:params:oauth:grant-type:device_code'))
  t.type(await idp.token(), 'string')
})

t.test('stop refuses connections, start recovers on the same issuer and keys', async (t) => {
  const idp = await startOidcProvider()
  t.teardown(() => idp.close())
  const token = await idp.token()
  const kidsBefore = await kids(idp.jwksUri)
  const res = await fetch(idp.discoveryUrl)
  t.equal(res.headers.get('connection'), 'close', 'no pooled socket to outlive stop()')
  await res.arrayBuffer()

  await idp.stop()
  t.equal(await fetchErrorCode(idp.discoveryUrl), 'ECONNREFUSED')
  await t.rejects(idp.token())
  await idp.stop()

  await idp.start()
  t.equal((await getJson<Discovery>(idp.discoveryUrl)).issuer, idp.issuer)
  t.same(await kids(idp.jwksUri), kidsBefore)
  await jwtVerify(token, createRemoteJWKSet(new URL(idp.jwksUri)), { issuer: idp.issuer })
  await idp.start()
})

t.test('requestCount counts requests per path', async (t) => {
  const idp = await startOidcProvider()
  t.teardown(() => idp.close())
  t.equal(idp.requestCount('/jwks'), 0)

  await kids(idp.jwksUri)
  await kids(idp.jwksUri)
  t.equal(idp.requestCount('/jwks'), 2)

  const jwks = createRemoteJWKSet(new URL(idp.jwksUri))
  const a = await idp.token()
  const b = await idp.token({ scopes: ['relay:session:read'] })
  await jwtVerify(a, jwks, { issuer: idp.issuer })
  await jwtVerify(b, jwks, { issuer: idp.issuer })
  t.equal(idp.requestCount('/jwks'), 3, 'a cached remote JWKS fetches once')
  t.equal(idp.requestCount('/token'), 2)
  t.equal(idp.requestCount('/nowhere'), 0)
})
