// The web console in a real Chromium, end to end: sign in at the suite's OpenID provider
// (authorization code + PKCE, the test filling the provider's login and consent pages), create
// an application, write its source in the editor, build it and watch the log stream until the
// build succeeds (on the fake Kubernetes cluster), invoke the function and read its answer
// (through the fake API server's service proxy), see a chart drawn from a real Prometheus, and
// delete the application. Every page is screenshotted and checked with axe-core; the page must
// never report a Content-Security-Policy violation.
import { readFileSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import type { Test } from 'tap'
import type { Page } from 'playwright-core'
import { startOidcProvider } from '../fixtures/oidc-provider.js'
import { podOfJob, runJob, succeedJob } from '../fixtures/kube-jobs.js'
import { writePodLog } from '../fixtures/kube-pods.js'
import { setServiceBackend } from '../fixtures/kube-services.js'
import { operateSpinApp, SPINAPPS } from '../fixtures/kube-spinapps.js'
import { startPrometheus } from '../fixtures/prometheus.js'
import { filesOf, tgzOf } from '../fixtures/tarballs.js'
import { launchBrowser, newContext } from '../helpers/browser.js'
import { REPOSITORY, startClusterControl } from '../helpers/cluster.js'
import { checkPage, pageProblems } from '../helpers/console.js'
import { until } from '../helpers/control.js'
import { freePort } from '../helpers/ports.js'

const WAIT = { timeout: 15_000 }

/** A function behind the fake cluster's Service: answers JSON naming what it was sent. */
async function startFunction (t: Test): Promise<string> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      const body = Buffer.concat(chunks)
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ greeting: 'hello from wasm', method: req.method, url: req.url, body: body.toString('hex') }))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

/** The provider's development login and consent pages, as a user fills them in. */
async function fillProviderPages (page: Page, login: string): Promise<void> {
  await page.locator('input[name=login]').fill(login)
  await page.locator('input[name=password]').fill('any password')
  await page.getByRole('button', { name: 'Sign-in' }).click()
  await page.getByRole('button', { name: 'Continue' }).click() // consent
}

// Chromium, Prometheus and a build: more than the default two minutes on a busy machine.
t.setTimeout(300_000)

t.test('sign in, create, edit, build, invoke, chart, delete', async (t) => {
  const port = await freePort()
  const prometheusPort = await freePort()
  const oidc = await startOidcProvider({ browserClient: { redirectUri: `http://127.0.0.1:${port}/` } })
  t.teardown(() => oidc.close())
  const { control, fake } = await startClusterControl(t, 'pglite', {
    flags: [
      '--addr', `127.0.0.1:${port}`, '--dev-insecure-skip-auth=false', '--log-level', 'warn',
      '--oidc-issuer', oidc.issuer, '--oidc-audience', oidc.browserClientId, '--console-client-id', oidc.browserClientId,
      '--prometheus-url', `http://127.0.0.1:${prometheusPort}`, '--metrics-rate-window', '5s',
    ],
  })
  const prometheus = await startPrometheus(t, { port: prometheusPort, targets: [`127.0.0.1:${port}`] })
  // The API as the signed-in user, with the id token the console holds.
  let token = ''
  const api = (method: string, path: string) => control.call(method, path, { token })

  const browser = await launchBrowser(t)
  const context = await newContext(t, browser, { viewport: { width: 1280, height: 900 } })
  context.setDefaultTimeout(15_000)
  const page = await context.newPage()
  const problems = pageProblems(page)
  const authorizations: string[] = []
  page.on('request', (request) => { if (request.url().startsWith(`${oidc.issuer}/auth?`)) authorizations.push(request.url()) })

  // ---- sign-in ----
  await page.goto(`${control.url}/`)
  await page.getByRole('button', { name: 'Sign in' }).waitFor(WAIT)
  await checkPage(t, page, 'sign-in')
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.waitForURL((url) => url.origin === oidc.issuer, WAIT)
  const authorization = new URL(authorizations[0] ?? 'http://none/')
  t.equal(authorization.searchParams.get('code_challenge_method'), 'S256', 'PKCE: the authorization request carries an S256 challenge')
  t.equal(authorization.searchParams.get('response_type'), 'code', 'authorization code flow')
  await fillProviderPages(page, 'ada')
  await page.getByRole('heading', { name: 'Applications' }).waitFor(WAIT)
  t.equal(new URL(page.url()).search, '', 'the code and state are gone from the address')
  t.ok(await page.getByText('ada', { exact: true }).isVisible(), 'signed in as ada (from the id token)')
  const stored = JSON.parse(await page.evaluate('sessionStorage.getItem("console.tokens") ?? "{}"')) as { idToken?: string; refreshToken?: string }
  t.ok(stored.idToken !== undefined && stored.refreshToken !== undefined, 'an id token and a refresh token, in sessionStorage')
  token = stored.idToken ?? ''
  await checkPage(t, page, 'applications-empty')

  // ---- create ----
  await page.getByLabel('Name').fill('hello')
  await page.getByLabel('Language').selectOption('js')
  await page.getByLabel('Description').fill('says hello')
  await page.getByRole('button', { name: 'Create' }).click()
  await page.getByRole('heading', { name: /^hello/ }).waitFor(WAIT)
  const apps = (await api('GET', '/applications')).body as Array<{ id: string; name: string; language: string; description: string }>
  t.match(apps, [{ name: 'hello', language: 'js', description: 'says hello' }], 'created through the API, as typed')
  const appId = apps[0]?.id as string

  // ---- edit the source ----
  await page.getByLabel('New file').fill('index.js')
  await page.getByRole('button', { name: 'Add file' }).click()
  await page.locator('.cm-content').click()
  await page.keyboard.type('export const greeting = "hello"')
  await page.getByRole('button', { name: 'Save', exact: true }).click()
  await page.getByText('Saved.').waitFor(WAIT)
  const fnId = ((await api('GET', `/applications/${appId}`)).body as { functions: Array<{ id: string }> }).functions[0]?.id as string
  const source = (await api('GET', `/applications/${appId}/functions/${fnId}/source`)).body as { files: Record<string, string> }
  t.same(Object.keys(source.files).sort(), ['index.js', 'package.json', 'src/index.js'], 'the whole map was saved: the template\'s files and the new one')
  t.match(source.files['index.js'], /^export const greeting = "hello"/, 'with what was typed in the editor')
  await checkPage(t, page, 'code')

  // ---- the .tar.gz: download, then upload one with another file ----
  const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download .tar.gz' }).click()])
  t.equal(download.suggestedFilename(), 'hello.tar.gz')
  t.match(await filesOf(readFileSync(await download.path())), { 'index.js': /^export const greeting/ }, 'the download holds the saved map')
  await page.locator('input[type=file][accept^=".tar.gz"]').setInputFiles({
    name: 'src.tar.gz', mimeType: 'application/gzip',
    buffer: await tgzOf([{ name: 'index.js', content: 'export const greeting = "hi"\n' }, { name: 'spin.toml', content: 'spin_manifest_version = 2\n' }]),
  })
  await page.getByText('Uploaded src.tar.gz: 2 files.').waitFor(WAIT)
  t.same(Object.keys(((await api('GET', `/applications/${appId}/functions/${fnId}/source`)).body as { files: object }).files).sort(), ['index.js', 'spin.toml'], 'the upload replaced the map')
  await page.getByRole('button', { name: 'spin.toml' }).click()
  await page.locator('.editor[data-file="spin.toml"] .cm-content', { hasText: 'spin_manifest_version' }).waitFor(WAIT)

  // ---- functions: add one, change its route, delete it ----
  await page.getByLabel('New function').fill('api')
  await page.getByLabel('Route', { exact: true }).fill('/api/...')
  await page.getByRole('button', { name: 'Add function' }).click()
  await page.getByLabel('Route of api').waitFor(WAIT)
  await page.getByLabel('Route of api').fill('/v2/...')
  await page.getByRole('button', { name: 'Change route' }).and(page.locator(':not([disabled])')).click()
  await page.getByText('saved', { exact: true }).waitFor(WAIT)
  const functions = () => api('GET', `/applications/${appId}/functions`).then((r) => (r.body as Array<{ name: string; route: string }>).map((f) => `${f.name} ${f.route}`).sort())
  t.same(await functions(), ['api /v2/...', 'hello /...'], 'added, and its route changed')
  await page.getByRole('button', { name: 'Delete function api' }).click()
  await page.getByRole('button', { name: 'Yes, delete' }).click()
  await page.getByLabel('Route of api').waitFor({ state: 'detached', ...WAIT })
  t.same(await functions(), ['hello /...'], 'deleted after the confirmation')

  // ---- build, log streaming live ----
  await page.getByRole('link', { name: 'Build & deploy' }).click()
  await page.getByRole('button', { name: 'Build', exact: true }).click()
  let buildId = ''
  await until(async () => {
    buildId = ((await api('GET', `/applications/${appId}/builds`)).body as Array<{ id: string }>)[0]?.id ?? ''
    return buildId !== ''
  }, 10_000, 'the build to start')
  const job = `build-${buildId}`
  // The fake's Job controller makes the pod a moment after the Job.
  await until(() => { try { return podOfJob(fake, job) !== undefined } catch { return false } }, 10_000, 'the build pod')
  runJob(fake, job)
  const pod = podOfJob(fake, job).metadata.name
  await page.getByText('Waiting for the build to start…').waitFor({ state: 'detached', ...WAIT }).catch(() => {})
  writePodLog(fake, pod, 'compiling hello\n')
  await page.locator('pre[aria-label="Build log"]', { hasText: 'compiling hello' }).waitFor(WAIT)
  t.pass('the build log streams into the page while the build runs')
  writePodLog(fake, pod, 'componentized: 1 component\n')
  succeedJob(fake, job, `${REPOSITORY}/hello@sha256:${'b'.repeat(64)}`)
  await page.locator('[data-testid=build-status]', { hasText: 'succeeded' }).waitFor(WAIT)
  t.match(await page.locator('pre[aria-label="Build log"]').textContent(), /compiling hello\ncomponentized/, 'the whole log')
  await until(() => fake.get(SPINAPPS, 'hello') !== undefined, 10_000, 'the SpinApp applied')
  operateSpinApp(fake, 'hello')
  await until(async () => ((await api('GET', `/applications/${appId}`)).body as { deployment: { ready: boolean } | null }).deployment?.ready === true, 10_000, 'deployment ready')
  await page.getByRole('button', { name: 'Refresh' }).click()
  await page.locator('dl.facts span.ok', { hasText: /^ready$/ }).waitFor(WAIT)
  t.match(await page.locator('dl.facts').textContent(), /registry\.test\/apps\/hello@sha256/, 'the deployment shows its image')
  await checkPage(t, page, 'build')

  // ---- invoke ----
  setServiceBackend(fake, 'hello', await startFunction(t))
  await page.getByRole('link', { name: 'Invoke' }).click()
  await page.getByLabel('Path').fill('/hello/world?x=1')
  await page.getByRole('button', { name: 'Send' }).click()
  await page.locator('[data-testid=invoke-status]').waitFor(WAIT)
  t.equal(await page.locator('[data-testid=invoke-status]').textContent(), '200', 'the function\'s status')
  const body = await page.locator('[data-testid=invoke-body]').textContent() ?? ''
  t.match(body, /\n {2}"greeting": "hello from wasm"/, 'its JSON body, pretty')
  t.match(body, /"url": "\/hello\/world\?x=1"/, 'the path as typed reached the function')
  await checkPage(t, page, 'invoke')
  // A binary body from a file goes as base64, and says so.
  await page.getByLabel('Method').selectOption('POST')
  await page.locator('form input[type=file]:not([accept])').setInputFiles({ name: 'bytes.bin', mimeType: 'application/octet-stream', buffer: Buffer.from([0, 255, 7]) })
  await page.getByText('bytes.bin, 3 bytes, sent as base64').waitFor(WAIT)
  await page.getByRole('button', { name: 'Send' }).click()
  await page.locator('[data-testid=invoke-body]', { hasText: '"body": "00ff07"' }).waitFor(WAIT)
  t.pass('the file\'s bytes reached the function unchanged')

  // ---- logs and metrics tabs ----
  await page.getByRole('link', { name: 'Logs' }).click()
  await page.getByRole('heading', { name: 'Application log' }).waitFor(WAIT)
  await checkPage(t, page, 'logs')
  await page.getByRole('link', { name: 'Metrics' }).click()
  await page.locator('figure[data-series=cpu] canvas').waitFor(WAIT)
  await page.locator('figure[data-series=requestRate] canvas').waitFor(WAIT)
  t.pass('the application\'s and the function\'s series, charted')
  await checkPage(t, page, 'metrics')

  // ---- a chart from a real Prometheus (the control plane's own request rate) ----
  await prometheus.scrapes(8)
  await page.getByRole('link', { name: 'Applications' }).first().click()
  await page.getByRole('heading', { name: 'Applications' }).waitFor(WAIT)
  const section = page.locator('section', { has: page.getByRole('heading', { name: 'Platform metrics' }) })
  await section.getByLabel('Range').selectOption('5m')
  await section.getByLabel('Step').selectOption('15s')
  const chart = section.locator('figure[data-series=httpRequestRate]')
  // Rates need two scrapes inside their window: refreshed, a scrape at a time, until they are there.
  let label = ''
  for (let i = 0; i < 20; i++) {
    await chart.locator('canvas').waitFor(WAIT)
    label = await chart.getByRole('img').getAttribute('aria-label') ?? ''
    if (!label.endsWith(': 0 samples')) break
    await prometheus.scrapes(1)
    await section.getByRole('button', { name: 'Refresh' }).click()
    await section.getByText('loading…').waitFor({ state: 'detached', ...WAIT })
  }
  t.match(label, /^API request rate \(req\/s\): [1-9]\d* samples$/, `the chart has samples from Prometheus (${label})`)
  await checkPage(t, page, 'applications')

  // ---- the same pages at phone width ----
  await page.setViewportSize({ width: 390, height: 844 })
  await checkPage(t, page, 'applications-phone')
  await page.goto(`${control.url}/#/apps/${appId}/code`)
  await page.locator('.cm-content').waitFor(WAIT)
  await checkPage(t, page, 'code-phone')
  await page.setViewportSize({ width: 1280, height: 900 })
  await page.goto(`${control.url}/#/`)

  // ---- delete, confirmed ----
  await page.getByRole('button', { name: 'Delete hello' }).click()
  await page.getByRole('button', { name: 'Yes, delete' }).click()
  await page.getByText('No applications yet').waitFor(WAIT)
  t.same((await api('GET', '/applications')).body, [], 'deleted through the API')

  t.same(problems, [], 'no Content-Security-Policy violation or script error on any page')
  const logs = control.logText()
  t.notOk(logs.includes(stored.idToken ?? '-'), 'the id token never reaches the control plane\'s log')
})

t.test('metrics without Prometheus: the page says so in words', async (t) => {
  const { control } = await startClusterControl(t, 'pglite', { flags: ['--log-level', 'warn'] })
  const browser = await launchBrowser(t)
  const page = await (await newContext(t, browser)).newPage()
  await page.goto(`${control.url}/`)
  await page.getByRole('heading', { name: 'Applications' }).waitFor(WAIT)
  const notice = page.locator('section', { has: page.getByRole('heading', { name: 'Platform metrics' }) }).getByRole('alert')
  await notice.waitFor(WAIT)
  t.match(await notice.textContent(), /^Metrics are not available: .*PLATFORM_PROMETHEUS_URL/, 'the 503 in words, naming the setting')
})

t.test('an id token about to expire is refreshed with the refresh token before it is sent', async (t) => {
  const port = await freePort()
  // 30 s tokens: inside the minute before expiry the console refreshes, so at once here.
  const oidc = await startOidcProvider({ browserClient: { redirectUri: `http://127.0.0.1:${port}/` }, idTokenTtlSeconds: 30 })
  t.teardown(() => oidc.close())
  const control = (await startClusterControl(t, 'pglite', {
    flags: ['--addr', `127.0.0.1:${port}`, '--dev-insecure-skip-auth=false', '--log-level', 'warn', '--oidc-issuer', oidc.issuer, '--oidc-audience', oidc.browserClientId, '--console-client-id', oidc.browserClientId],
  })).control
  const browser = await launchBrowser(t)
  const context = await newContext(t, browser)
  context.setDefaultTimeout(15_000)
  const page = await context.newPage()
  const refreshes: string[] = []
  page.on('request', (request) => { if (request.url() === `${oidc.issuer}/token` && /grant_type=refresh_token/.test(request.postData() ?? '')) refreshes.push(request.url()) })
  await page.goto(`${control.url}/`)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await fillProviderPages(page, 'grace')
  await page.getByText('No applications yet').waitFor(WAIT)
  const tokens = JSON.parse(await page.evaluate('sessionStorage.getItem("console.tokens") ?? "{}"')) as { idToken?: string }
  t.ok(refreshes.length >= 1, `refreshed through the token endpoint (${refreshes.length} times)`)
  const answer = await control.call('GET', '/applications', { token: tokens.idToken ?? '' })
  t.equal(answer.status, 200, 'the refreshed id token is one the control plane accepts')
})
