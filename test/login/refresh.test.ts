// The shared refresh against the suite's real OpenID provider: which token a login keeps as its
// bearer, and one refresh for callers that ask at the same time (a rotated refresh token is
// good for one use only, so a second refresh with it would be refused).
import t from 'tap'
import { deviceLogin } from '../../login/src/device.js'
import type { LoginError } from '../../login/src/errors.js'
import { discoverProvider } from '../../login/src/provider.js'
import { refresh, tokenSource } from '../../login/src/refresh.js'
import type { Tokens } from '../../login/src/tokens.js'
import { startOidcProvider } from '../fixtures/oidc-provider.js'
import { actAsUser } from '../helpers/device-user.js'

t.test('an id-token login keeps the id token expiry; concurrent callers share one refresh', async (t) => {
  const idp = await startOidcProvider()
  t.teardown(() => idp.close())
  const provider = await discoverProvider(idp.issuer, idp.deviceClientId)
  t.ok(provider.device_authorization_endpoint, 'the discovery document names the device endpoint')
  let approving: Promise<string> | undefined
  const login = await deviceLogin({
    provider,
    clientId: idp.deviceClientId,
    scope: 'openid offline_access',
    bearer: 'id_token',
    onPrompt: (prompt) => {
      approving = actAsUser(prompt.verification_uri, prompt.user_code)
    },
  })
  t.match(await approving, /device approved/)
  const idClaims = JSON.parse(Buffer.from(login.id_token?.split('.')[1] ?? '', 'base64url').toString()) as {
    exp: number
  }
  t.equal(login.expires_at, idClaims.exp * 1000, "expires_at is the id token's exp")

  const stored: Tokens[] = []
  const source = tokenSource(
    { ...login, expires_at: Date.now() - 1000 },
    { bearer: 'id_token', onRefresh: (fresh) => void stored.push(fresh) },
  )
  const before = idp.requestCount('/token')
  const [a, b, c] = await Promise.all([source(), source(), source()])
  t.equal(idp.requestCount('/token'), before + 1, 'one refresh at the token endpoint')
  t.equal(stored.length, 1)
  t.equal(a, stored[0]?.id_token)
  t.same([b, c], [a, a])
  t.not(stored[0]?.refresh_token, login.refresh_token, 'the rotated refresh token handed over')
  t.equal(await source(), a, 'fresh: no second refresh')
  t.equal(idp.requestCount('/token'), before + 1)

  // The refresh token the one refresh used is spent: the provider refuses it.
  const spent = await refresh(login, { bearer: 'id_token' }).catch((error: unknown) => error)
  t.equal((spent as LoginError).code, 'refused')
  const none = await refresh({ ...login, refresh_token: undefined }).catch((error: unknown) => error)
  t.equal((none as LoginError).code, 'no_refresh_token')
})
