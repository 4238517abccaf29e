// Device login (RFC 8628) through openid-client against the suite's real OpenID provider, the
// user played over HTTP; the tokens it gets work on the relay's admin API and refresh.
import t from 'tap'
import type { Test } from 'tap'
import { RelayError, adminClient, discover, login, refresh, tokenSource } from '../../client/src/index.js'
import type { DevicePrompt } from '../../client/src/index.js'
import { startOidcProvider } from '../fixtures/oidc-provider.js'
import { actAsUser } from '../helpers/device-user.js'
import { startTestRelay } from '../helpers/relay.js'

async function setup(t: Test) {
  const idp = await startOidcProvider()
  t.teardown(() => idp.close())
  const relay = await startTestRelay(t, [
    '--oidc-issuer',
    idp.issuer,
    '--oidc-audience',
    'https://relay.test',
    '--oidc-client-id',
    idp.deviceClientId,
    '--log-level',
    'warn',
  ])
  const discovery = await discover(relay.http)
  if (discovery === null) throw new Error('the relay runs with auth')
  return { idp, relay, discovery }
}

t.test('login: the user approves the code; the token creates a session; refresh gives a working one', async (t) => {
  const { relay, discovery } = await setup(t)
  t.equal(discovery.client_id_hint, 'relay-cli')
  let approving: Promise<string> | undefined
  const tokens = await login({
    discovery,
    onPrompt: (prompt: DevicePrompt) => {
      approving = actAsUser(prompt.verification_uri, prompt.user_code)
    },
  })
  t.match(await approving, /device approved/)
  t.ok(tokens.refresh_token, 'offline_access gave a refresh token')
  t.ok((tokens.expires_at ?? 0) > Date.now())
  const admin = adminClient({ server: relay.http, token: tokens.access_token })
  const created = await admin.createSession()
  t.equal((await admin.getSession(created.id)).state, 'pending')

  const fresh = await refresh(tokens)
  t.not(fresh.access_token, tokens.access_token)
  t.equal((await adminClient({ server: relay.http, token: fresh.access_token }).getSession(created.id)).id, created.id)

  // a token source refreshes when the access token is about to expire, and says so
  let stored: unknown
  const source = tokenSource(
    { ...fresh, expires_at: Date.now() + 1000 },
    {
      onRefresh: (next) => {
        stored = next
      },
    },
  )
  const viaSource = adminClient({ server: relay.http, token: source })
  t.equal((await viaSource.getSession(created.id)).id, created.id)
  t.ok(stored, 'refreshed and handed over for storage')
})

t.test('login: the user aborts: login_denied', async (t) => {
  const { discovery } = await setup(t)
  const error = await login({
    discovery,
    onPrompt: (prompt) => {
      void actAsUser(prompt.verification_uri, prompt.user_code, { deny: true }).catch(() => {})
    },
  }).catch((e: unknown) => e)
  t.ok(error instanceof RelayError)
  t.equal((error as RelayError).code, 'login_denied')
})

t.test("admin without a token: unauthorized with the relay's status and body", async (t) => {
  const { relay } = await setup(t)
  const error = await adminClient({ server: relay.http })
    .createSession()
    .catch((e: unknown) => e)
  t.ok(error instanceof RelayError)
  t.match(error, { code: 'unauthorized', status: 401, body: { error: String } })
})

t.test('a token without the scope is forbidden (403); a refused refresh token is unauthorized', async (t) => {
  const { idp, relay, discovery } = await setup(t)
  const bare = await idp.token({ scopes: ['relay:session:read'] })
  const error = await adminClient({ server: relay.http, token: bare })
    .createSession()
    .catch((e: unknown) => e)
  t.match(error, { code: 'forbidden', status: 403 })
  const refused = await refresh({
    issuer: discovery.issuer,
    token_endpoint: discovery.token_endpoint,
    client_id: idp.deviceClientId,
    access_token: 'x',
    refresh_token: 'not-a-refresh-token',
  }).catch((e: unknown) => e)
  t.ok(refused instanceof RelayError)
  t.equal((refused as RelayError).code, 'unauthorized')
  const none = await refresh({
    issuer: discovery.issuer,
    token_endpoint: discovery.token_endpoint,
    client_id: idp.deviceClientId,
    access_token: 'x',
  }).catch((e: unknown) => e)
  t.match(none, { code: 'unauthorized' })
})

t.test('a provider without device flow: login says so before asking anything', async (t) => {
  const idp = await startOidcProvider({ deviceFlow: false })
  t.teardown(() => idp.close())
  const relay = await startTestRelay(t, ['--oidc-issuer', idp.issuer, '--log-level', 'warn'])
  const discovery = await discover(relay.http)
  const error = await login({
    discovery: discovery as NonNullable<typeof discovery>,
    onPrompt: () => t.fail('no prompt'),
  }).catch((e: unknown) => e)
  t.match(error, { code: 'bad_request', message: /no device login/ })
})
