// The verified-token cache shared by both processes: a token's signature is checked once and
// the token is trusted until it expires, never past it, never for another audience, and not
// after the keys change.
import t from 'tap'
import { createOidcKeys, TokenRejectedError, verifyBearer } from '../common/src/oidc-keys.js'
import type { OidcKeys } from '../common/src/oidc-keys.js'
import { startOidcProvider } from './fixtures/oidc-provider.js'

const AUDIENCE = 'https://relay.test'
const quiet = { info () {}, warn () {} }

/** The same keys, counting how often a signature had to be checked. */
function counting (keys: OidcKeys): { keys: OidcKeys; checks: () => number } {
  let checks = 0
  return { keys: { ...keys, getKey: (header, token) => { checks++; return keys.getKey(header, token) } }, checks: () => checks }
}

t.test('a verified token is checked once, then trusted until it expires', async (t) => {
  const oidc = await startOidcProvider({ accessTokenTtlSeconds: 2 })
  t.teardown(() => oidc.close())
  const base = createOidcKeys({ issuer: oidc.issuer, logger: quiet })
  t.teardown(() => base.close())
  const { keys, checks } = counting(base)
  const header = `Bearer ${await oidc.token()}`

  const first = await verifyBearer(keys, header, AUDIENCE)
  for (let i = 0; i < 50; i++) t.same(await verifyBearer(keys, header, AUDIENCE), first)
  t.equal(checks(), 1, '51 requests, one signature check')

  await t.rejects(verifyBearer(keys, header, 'https://other.test'), TokenRejectedError, 'another audience is checked afresh, and refused')
  t.equal(checks(), 2)

  await new Promise((resolve) => setTimeout(resolve, 2_100))
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
