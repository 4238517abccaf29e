// wasmkube with authentication on, against the suite's real OpenID provider: device login from
// what the control plane publishes (tokens stored 0600 and refreshed), and the CI path: a
// client-credentials token from the provider, for the control plane's audience, given as
// WASMKUBE_TOKEN or --token-file.
import { readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { startOidcProvider } from '../fixtures/oidc-provider.js'
import { startTestControl } from '../helpers/control.js'
import { actAsUser } from '../helpers/device-user.js'
import { wasmkube } from '../helpers/wasmkube.js'

const CONTROL_AUDIENCE = 'https://control.test'

t.test('device login: the tokens are stored 0600, used, and refreshed near expiry', async (t) => {
  const idp = await startOidcProvider({ audiences: [CONTROL_AUDIENCE] })
  t.teardown(() => idp.close())
  // The API takes id tokens: their audience is the client that logged in.
  const control = await startTestControl(t, 'pglite', [
    '--oidc-issuer',
    idp.issuer,
    '--oidc-audience',
    idp.deviceClientId,
    '--console-client-id',
    idp.deviceClientId,
    '--tenant-claim',
    'sub',
    '--log-level',
    'warn',
  ])
  const cli = wasmkube(t, { WASMKUBE_SERVER: control.url })

  const before = await cli(['apps'])
  t.equal(before.code, 1)
  t.match(before.stderr, '401 missing bearer token (log in with wasmkube login, or set WASMKUBE_TOKEN)')

  let approving: Promise<string> | undefined
  const login = await cli(['login'], {
    onStderr: (text) => {
      const prompt = /open (\S+)\nand enter the code (\S+) /.exec(text)
      if (prompt !== null && approving === undefined) approving = actAsUser(prompt[1] as string, prompt[2] as string)
    },
  })
  t.equal(login.code, 0, login.stderr)
  t.match(await approving, /device approved/)
  const file = join(cli.configHome, 'wasmkube', 'tokens.json')
  t.equal(statSync(file).mode & 0o777, 0o600, 'the token file is private')
  const stored = (): Record<string, { id_token: string; refresh_token: string; expires_at: number }> =>
    JSON.parse(readFileSync(file, 'utf8')) as never
  const first = stored()[control.url]
  t.ok(first?.refresh_token, 'offline_access gave a refresh token')

  const apps = await cli(['apps', '--json'])
  t.equal(apps.code, 0, apps.stderr)
  t.same(JSON.parse(apps.out), [])

  // An id token about to expire is refreshed before use, and the new one stored.
  writeFileSync(file, JSON.stringify({ [control.url]: { ...first, expires_at: Date.now() - 1000 } }))
  const tokenRequests = idp.requestCount('/token')
  const refreshed = await cli(['apps'])
  t.equal(refreshed.code, 0, refreshed.stderr)
  t.equal(idp.requestCount('/token'), tokenRequests + 1, 'one refresh at the token endpoint')
  const second = stored()[control.url]
  t.not(second?.refresh_token, first?.refresh_token, 'the rotated refresh token stored')
  t.ok((second?.expires_at ?? 0) > Date.now())
  t.equal(statSync(file).mode & 0o777, 0o600, 'still private after the rewrite')

  writeFileSync(
    file,
    JSON.stringify({
      [control.url]: { ...second, expires_at: Date.now() - 1000, refresh_token: 'not-a-refresh-token' },
    }),
  )
  const refused = await cli(['apps'])
  t.equal(refused.code, 1)
  t.match(refused.stderr, 'refused the refresh token: run wasmkube login')
})

t.test(
  'CI: a client-credentials token for the API audience works through WASMKUBE_TOKEN and --token-file',
  async (t) => {
    const idp = await startOidcProvider({ audiences: [CONTROL_AUDIENCE, 'https://elsewhere.test'] })
    t.teardown(() => idp.close())
    // A client-credentials token's sub and client_id are the CI client: its tenant here.
    const control = await startTestControl(t, 'pglite', [
      '--oidc-issuer',
      idp.issuer,
      '--oidc-audience',
      CONTROL_AUDIENCE,
      '--tenant-claim',
      'client_id',
      '--log-level',
      'warn',
    ])
    const token = await idp.token({ audience: CONTROL_AUDIENCE, scopes: [] })
    const me = await control.call('GET', '/me', { token })
    t.match(me.body, { tenants: [idp.clientId], role: 'member' })
    const created = await control.call('POST', '/applications', {
      token,
      json: { name: 'ci-app', language: 'js', runtime: 'wasmkube' },
    })
    t.equal(created.status, 201, created.text)

    const cli = wasmkube(t, { WASMKUBE_SERVER: control.url, WASMKUBE_TOKEN: token })
    const apps = await cli(['apps'])
    t.equal(apps.code, 0, apps.stderr)
    t.match(apps.out, /^NAME\s+LANGUAGE\s+CREATED\nci-app\s+js\s/)
    const set = await cli(['vars', 'set', 'ci-app', 'release=42'])
    t.equal(set.code, 0, set.stderr)

    const tokenFile = join(t.testdir(), 'token')
    writeFileSync(tokenFile, `${token}\n`)
    const fromFile = await wasmkube(t, { WASMKUBE_SERVER: control.url })([
      'vars',
      'list',
      'ci-app',
      '--token-file',
      tokenFile,
      '--json',
    ])
    t.equal(fromFile.code, 0, fromFile.stderr)
    t.same(JSON.parse(fromFile.out), { release: { value: '42' } })

    const elsewhere = await idp.token({ audience: 'https://elsewhere.test', scopes: [] })
    const wrong = await wasmkube(t, { WASMKUBE_SERVER: control.url, WASMKUBE_TOKEN: elsewhere })(['apps'])
    t.equal(wrong.code, 1, 'a token for another audience is refused')
    t.match(wrong.stderr, /wasmkube apps: 401 .*\(log in again: wasmkube login\)/)
    const missing = await wasmkube(t, { WASMKUBE_SERVER: control.url })([
      'apps',
      '--token-file',
      join(t.testdir(), 'none'),
    ])
    t.equal(missing.code, 1)
    t.match(missing.stderr, /--token-file .*none: ENOENT/)
  },
)

t.test('login against a control plane with authentication off: nothing to do', async (t) => {
  const control = await startTestControl(t, 'pglite')
  const outcome = await wasmkube(t, { WASMKUBE_SERVER: control.url })(['login'])
  t.equal(outcome.code, 0)
  t.match(outcome.stderr, 'runs with authentication off: no login needed')
})
