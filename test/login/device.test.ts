// The shared device login's refusals before any prompt, against the suite's real OpenID
// provider, and a stored login that lacks the token its command sends.
import t from 'tap'
import { deviceLogin } from '../../login/src/device.js'
import type { LoginError } from '../../login/src/errors.js'
import { discoverProvider } from '../../login/src/provider.js'
import { tokenSource } from '../../login/src/refresh.js'
import { startOidcProvider } from '../fixtures/oidc-provider.js'

t.test('a provider without device flow: no_device_login, and no prompt', async (t) => {
  const idp = await startOidcProvider({ deviceFlow: false })
  t.teardown(() => idp.close())
  const provider = await discoverProvider(idp.issuer, idp.deviceClientId)
  t.equal(provider.device_authorization_endpoint, undefined)
  const error = await deviceLogin({
    provider,
    clientId: idp.deviceClientId,
    scope: 'openid',
    onPrompt: () => t.fail('no prompt'),
  }).catch((e: unknown) => e)
  t.match(error, { code: 'no_device_login', message: /offers no device login/ })
})

t.test('an issuer that does not answer its discovery: network', async (t) => {
  const idp = await startOidcProvider()
  const issuer = idp.issuer
  await idp.close()
  const error = (await discoverProvider(issuer, 'cli').catch((e: unknown) => e)) as LoginError
  t.equal(error.code, 'network')
})

t.test('a login kept without an id token cannot send one', async (t) => {
  const source = tokenSource(
    { access_token: 'a', issuer: 'http://127.0.0.1:1', token_endpoint: 'http://127.0.0.1:1/token', client_id: 'c' },
    { bearer: 'id_token' },
  )
  t.match(await source().catch((e: unknown) => e), { code: 'no_id_token' })
  t.equal(await tokenSource({ access_token: 'a', issuer: 'x', token_endpoint: 'x', client_id: 'c' })(), 'a')
})
