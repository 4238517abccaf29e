// The control plane serving the web console: the files of a build at / with their caching and
// Content-Security-Policy headers, a 503 that says how to build when there is no build (the API
// unaffected), and the public sign-in settings the page starts from.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import type { Test } from 'tap'
import { parseConfig } from '@session-relay/control/config'
import { startOidcProvider } from '../fixtures/oidc-provider.js'
import { startTestControl } from '../helpers/control.js'

const INDEX =
  '<!doctype html><html lang="en"><title>console</title><script type="module" src="/assets/index-Ab12Cd34.js"></script></html>'
const SCRIPT = 'console.log("console")\n'

function fakeBuild(t: Test, files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'console-build-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(dir, name, '..'), { recursive: true })
    writeFileSync(join(dir, name), text)
  }
  return dir
}

t.test(
  'a build is served at /: index.html revalidated, hashed assets cached for good, a strict CSP on each',
  async (t) => {
    const oidc = await startOidcProvider()
    t.teardown(() => oidc.close())
    const dir = fakeBuild(t, { 'index.html': INDEX, 'assets/index-Ab12Cd34.js': SCRIPT })
    const control = await startTestControl(t, 'pglite', [
      '--oidc-issuer',
      oidc.issuer,
      '--console-client-id',
      'web-console',
      '--console-dir',
      dir,
    ])
    const csp = `default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; font-src 'self'; connect-src 'self' ${oidc.issuer}; base-uri 'none'; form-action 'self'; frame-ancestors 'none'`

    for (const path of ['/', '/index.html']) {
      const page = await fetch(`${control.url}${path}`)
      t.equal(page.status, 200, path)
      t.match(page.headers.get('content-type'), /^text\/html/, `${path}: html`)
      t.equal(
        page.headers.get('cache-control'),
        'no-cache',
        `${path}: revalidated on every load, so a new build shows at once`,
      )
      t.equal(
        page.headers.get('content-security-policy'),
        csp,
        `${path}: scripts from this origin only; fetches to it and the issuer`,
      )
      t.equal(await page.text(), INDEX)
    }

    const script = await fetch(`${control.url}/assets/index-Ab12Cd34.js`)
    t.equal(script.status, 200)
    t.match(script.headers.get('content-type'), /javascript/)
    t.equal(
      script.headers.get('cache-control'),
      'public, max-age=31536000, immutable',
      'a hashed asset never changes under its name',
    )
    t.equal(script.headers.get('content-security-policy'), csp)
    t.equal(script.headers.get('x-content-type-options'), 'nosniff')
    t.equal(await script.text(), SCRIPT)

    const missing = await fetch(`${control.url}/assets/index-00000000.js`)
    t.equal(missing.status, 404, 'a file not in the build')
    t.match(await missing.json(), { error: 'no route GET /assets/index-00000000.js' }, "the API's own 404")

    const config = await fetch(`${control.url}/api/v1/console-config`)
    t.equal(config.status, 200, 'public: the page reads it before anyone signs in')
    t.same(await config.json(), {
      auth: { issuer: oidc.issuer, clientId: 'web-console', scopes: 'openid offline_access' },
    })
    t.equal((await fetch(`${control.url}/api/v1/applications`)).status, 401, 'the API itself still needs a token')
  },
)

t.test('no build: / answers 503 saying how to build; the API works', async (t) => {
  const empty = fakeBuild(t, {})
  const control = await startTestControl(t, 'pglite', ['--dev-insecure-skip-auth', '--console-dir', empty])
  const page = await fetch(`${control.url}/`)
  t.equal(page.status, 503)
  t.match(await page.json(), {
    error: /^the web console is not built: run "npm run build" .*--console-dir \(PLATFORM_CONSOLE_DIR\)/,
  })
  t.equal((await control.call('GET', '/applications')).status, 200, 'the API is unaffected')
  t.same((await control.call('GET', '/console-config')).body, { auth: null }, 'authentication off: no sign-in')
})

t.test('--console-scopes must include openid', async (t) => {
  t.throws(() => parseConfig(['--dev-insecure-skip-auth', '--console-scopes', 'profile email'], {}), {
    message: /--console-scopes.*openid/,
  })
  t.equal(
    parseConfig(['--dev-insecure-skip-auth', '--console-scopes', ' openid   email '], {}).consoleScopes,
    'openid email',
  )
})
