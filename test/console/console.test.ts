// The web console in a real Chromium, end to end, on the control plane's local runtime: sign in
// at the suite's OpenID provider (authorization code + PKCE, the test filling the provider's
// login and consent pages), create an application, rewrite its source in the editor, build it
// for real (the builder program, j2w) and watch the log stream until the build succeeds, invoke
// the component the build made and read its changed answer, see a chart drawn from a real
// Prometheus, look at it all as a read-only user (no controls that would change anything, and
// the API still refuses), and delete the application. Every page is screenshotted and checked
// with axe-core; the page must never report a Content-Security-Policy violation.
import { readFileSync } from 'node:fs'
import t from 'tap'
import type { Page } from 'playwright-core'
import { startPrometheus } from '../fixtures/prometheus.js'
import { filesOf, tgzOf } from '../fixtures/tarballs.js'
import { launchBrowser, newContext } from '../helpers/browser.js'
import { startRealClusterControl } from '../helpers/cluster.js'
import { checkPage, consoleSignIn, pageProblems, startConsoleControl } from '../helpers/console.js'
import { freePort } from '../helpers/ports.js'

const WAIT = { timeout: 15_000 }
// One real js build: ~10 s alone, much more on a machine busy with other tests.
const BUILD_WAIT = { timeout: 240_000 }

// tap's loader hooks (NODE_OPTIONS) would load into every builder and host the runtime starts.
const nodeOptions = process.env.NODE_OPTIONS
delete process.env.NODE_OPTIONS
t.teardown(() => {
  if (nodeOptions !== undefined) process.env.NODE_OPTIONS = nodeOptions
})

// What the user types over the template: a handler whose answer differs from the template's
// ("hello from hello") and names what it was sent. Two lines without indentation, so the
// editor's auto-indent has nothing to add.
const PROGRAM = [
  "addEventListener('fetch', (event) => event.respondWith(answer(event.request)))",
  "async function answer (request) { const url = new URL(request.url); const bytes = [...new Uint8Array(await request.arrayBuffer())]; console.log(`served ${request.method} ${url.pathname}`); return new Response(JSON.stringify({ greeting: 'edited in the console', path: url.pathname + url.search, bytes }), { headers: { 'content-type': 'application/json' } }) }",
]

/** The provider's development login and consent pages, as a user fills them in. */
async function fillProviderPages(page: Page, login: string): Promise<void> {
  await page.locator('input[name=login]').fill(login)
  await page.locator('input[name=password]').fill('any password')
  await page.getByRole('button', { name: 'Sign-in' }).click()
  await page.getByRole('button', { name: 'Continue' }).click() // consent
}

/** The id token the console keeps for the signed-in user. */
async function idTokenOf(page: Page): Promise<string> {
  return (
    (JSON.parse(await page.evaluate('sessionStorage.getItem("console.tokens") ?? "{}"')) as { idToken?: string })
      .idToken ?? ''
  )
}

// Chromium, Prometheus and a real build: more than the default two minutes on a busy machine.
t.setTimeout(480_000)

t.test('sign in, create, edit, build for real, invoke, chart, read-only, delete', async (t) => {
  const prometheusPort = await freePort()
  const { port, oidc, control } = await startConsoleControl(t, [
    '--prometheus-url',
    `http://127.0.0.1:${prometheusPort}`,
    '--metrics-rate-window',
    '5s',
  ])
  t.not(control.server.local, null, 'the local runtime: real builds, real components')
  const prometheus = await startPrometheus(t, { port: prometheusPort, targets: [`127.0.0.1:${port}`] })
  // The API as the signed-in user, with the id token the console holds.
  let token = ''
  const api = (method: string, path: string, json?: unknown) =>
    control.call(method, path, { token, ...(json === undefined ? {} : { json }) })

  const browser = await launchBrowser(t)
  const context = await newContext(t, browser, { viewport: { width: 1280, height: 900 } })
  context.setDefaultTimeout(15_000)
  const page = await context.newPage()
  const problems = pageProblems(page)
  const authorizations: string[] = []
  page.on('request', (request) => {
    if (request.url().startsWith(`${oidc.issuer}/auth?`)) authorizations.push(request.url())
  })

  // ---- sign-in ----
  await page.goto(`${control.url}/`)
  await page.getByRole('button', { name: 'Sign in' }).waitFor(WAIT)
  await checkPage(t, page, 'sign-in')
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.waitForURL((url) => url.origin === oidc.issuer, WAIT)
  const authorization = new URL(authorizations[0] ?? 'http://none/')
  t.equal(
    authorization.searchParams.get('code_challenge_method'),
    'S256',
    'PKCE: the authorization request carries an S256 challenge',
  )
  t.equal(authorization.searchParams.get('response_type'), 'code', 'authorization code flow')
  await fillProviderPages(page, 'ada')
  await page.getByRole('heading', { name: 'Applications' }).waitFor(WAIT)
  t.equal(new URL(page.url()).search, '', 'the code and state are gone from the address')
  t.ok(await page.getByText('ada', { exact: true }).isVisible(), 'signed in as ada (from the id token)')
  const stored = JSON.parse(await page.evaluate('sessionStorage.getItem("console.tokens") ?? "{}"')) as {
    idToken?: string
    refreshToken?: string
  }
  t.ok(
    stored.idToken !== undefined && stored.refreshToken !== undefined,
    'an id token and a refresh token, in sessionStorage',
  )
  token = stored.idToken ?? ''
  t.match(
    (await api('GET', '/me')).body,
    { role: 'member', tenants: ['default'] },
    'ada is a member: she may change things',
  )
  await checkPage(t, page, 'applications-empty')

  // ---- create ----
  await page.getByLabel('Name').fill('hello')
  await page.getByLabel('Language').selectOption('js')
  await page.getByLabel('Description').fill('says hello')
  await page.getByRole('button', { name: 'Create' }).click()
  await page.getByRole('heading', { name: /^hello/ }).waitFor(WAIT)
  const apps = (await api('GET', '/applications')).body as Array<{
    id: string
    name: string
    language: string
    description: string
  }>
  t.match(apps, [{ name: 'hello', language: 'js', description: 'says hello' }], 'created through the API, as typed')
  const appId = apps[0]?.id as string
  const fnId = ((await api('GET', `/applications/${appId}`)).body as { functions: Array<{ id: string }> }).functions[0]
    ?.id as string
  const sourceFiles = async () =>
    ((await api('GET', `/applications/${appId}/functions/${fnId}/source`)).body as { files: Record<string, string> })
      .files

  // ---- edit the source: the handler rewritten, a file added ----
  await page.getByRole('button', { name: 'src/index.js' }).click()
  await page.locator('.editor[data-file="src/index.js"] .cm-content', { hasText: "get('greeting')" }).waitFor(WAIT)
  await page.locator('.cm-content').click()
  await page.keyboard.press('ControlOrMeta+A')
  await page.keyboard.type(PROGRAM[0] as string)
  await page.keyboard.press('Enter')
  await page.keyboard.type(PROGRAM[1] as string)
  t.equal(
    await page.getByLabel('New file').getAttribute('placeholder'),
    'src/util.js',
    "the example file name is in the application's language",
  )
  await page.getByLabel('New file').fill('README.md')
  await page.getByRole('button', { name: 'Add file' }).click()
  await page.locator('.editor[data-file="README.md"] .cm-content').click()
  await page.keyboard.type('# hello')
  // A file added, renamed and removed before Save never reaches the server: Save sends the map.
  await page.getByLabel('New file').fill('scratch.txt')
  await page.getByRole('button', { name: 'Add file' }).click()
  await page.getByRole('button', { name: 'Rename', exact: true }).click()
  await page.getByLabel('Rename scratch.txt to').fill('notes.txt')
  await page.getByRole('button', { name: 'Rename', exact: true }).click()
  await page.locator('.editor[data-file="notes.txt"]').waitFor(WAIT)
  t.equal(await page.getByRole('button', { name: 'scratch.txt' }).count(), 0, 'renamed in the list')
  await page.getByRole('button', { name: 'Delete file' }).click()
  await page.getByRole('button', { name: 'Yes, remove' }).click()
  await page.locator('.editor[data-file="README.md"]').waitFor(WAIT)
  t.equal(await page.getByRole('button', { name: 'notes.txt' }).count(), 0, 'removed from the list')
  await page.getByRole('button', { name: 'Save', exact: true }).click()
  await page.getByText('Saved.').waitFor(WAIT)
  const saved = await sourceFiles()
  t.same(
    Object.keys(saved).sort(),
    ['README.md', 'package.json', 'src/index.js', 'variables.toml', 'wit/spin-variables.wit'],
    "the whole map was saved: the template's files and the new one",
  )
  t.equal(saved['src/index.js'], PROGRAM.join('\n'), 'the handler as typed in the editor')
  t.equal(saved['README.md'], '# hello')
  await page.getByRole('button', { name: 'src/index.js' }).click()
  await page
    .locator('.editor[data-file="src/index.js"] .cm-content', { hasText: 'edited in the console' })
    .waitFor(WAIT)
  await checkPage(t, page, 'code')

  // ---- the .tar.gz: download, then upload it back with the README renamed ----
  const [download] = await Promise.all([
    page.waitForEvent('download'),
    page.getByRole('button', { name: 'Download .tar.gz' }).click(),
  ])
  t.equal(download.suggestedFilename(), 'hello.tar.gz')
  const downloaded = await filesOf(readFileSync(await download.path()))
  t.same(downloaded, saved, 'the download holds the saved map')
  await page.locator('input[type=file][accept^=".tar.gz"]').setInputFiles({
    name: 'src.tar.gz',
    mimeType: 'application/gzip',
    buffer: await tgzOf(
      Object.entries(downloaded).map(([name, content]) => ({
        name: name === 'README.md' ? 'NOTES.md' : name,
        content,
      })),
    ),
  })
  await page.getByText('Uploaded src.tar.gz: 5 files.').waitFor(WAIT)
  t.same(
    Object.keys(await sourceFiles()).sort(),
    ['NOTES.md', 'package.json', 'src/index.js', 'variables.toml', 'wit/spin-variables.wit'],
    'the upload replaced the map',
  )
  await page.getByRole('button', { name: 'NOTES.md' }).click()
  await page.locator('.editor[data-file="NOTES.md"] .cm-content', { hasText: '# hello' }).waitFor(WAIT)

  // ---- functions: add one, change its route, delete it ----
  await page.getByLabel('New function').fill('api')
  await page.getByLabel('Route', { exact: true }).fill('/api/...')
  await page.getByRole('button', { name: 'Add function' }).click()
  await page.getByLabel('Route of api').waitFor(WAIT)
  await page.getByLabel('Route of api').fill('/v2/...')
  await page.getByRole('button', { name: 'Change route' }).and(page.locator(':not([disabled])')).click()
  await page.getByText('saved', { exact: true }).waitFor(WAIT)
  const functions = () =>
    api('GET', `/applications/${appId}/functions`).then((r) =>
      (r.body as Array<{ name: string; route: string }>).map((f) => `${f.name} ${f.route}`).sort(),
    )
  t.same(await functions(), ['api /v2/...', 'hello /...'], 'added, and its route changed')
  await page.getByRole('button', { name: 'Delete function api' }).click()
  await page.getByRole('button', { name: 'Yes, delete' }).click()
  await page.getByLabel('Route of api').waitFor({ state: 'detached', ...WAIT })
  t.same(await functions(), ['hello /...'], 'deleted after the confirmation')

  // ---- build for real, the log streaming live until it succeeds ----
  await page.getByRole('link', { name: 'Build & deploy' }).click()
  const started = Date.now()
  await page.getByRole('button', { name: 'Build', exact: true }).click()
  const log = page.locator('pre[aria-label="Build log"]')
  await log.filter({ hasNotText: 'Waiting for the build to start…' }).waitFor(BUILD_WAIT)
  const statusWhileStreaming = await page.locator('[data-testid=build-status]').textContent()
  // The build takes seconds and its first line comes at its start: seen before the status is final.
  t.match(
    statusWhileStreaming,
    /^(pending|running)$/,
    `the log streamed into the page while the build ran (${statusWhileStreaming ?? '?'})`,
  )
  await page.locator('[data-testid=build-status]', { hasText: /^(succeeded|failed)$/ }).waitFor(BUILD_WAIT)
  t.comment(`the build, as the page saw it: ${Date.now() - started} ms`)
  const logText = (await log.textContent()) ?? ''
  t.equal(
    await page.locator('[data-testid=build-status]').textContent(),
    'succeeded',
    `the build succeeded (its log ends: ${logText.slice(-400)})`,
  )
  await page.getByText('The log is complete.').waitFor(WAIT)
  t.ok(logText.length > 0, 'the build log was shown')
  // The host starts once the build is recorded: the page follows it to ready, no Refresh clicked.
  await page.locator('dl.facts span.ok', { hasText: /^ready$/ }).waitFor({ timeout: 60_000 })
  t.match(
    await page.getByTestId('conditions').textContent(),
    /^ConditionHoldsReasonMessageSinceDeployedyesApplied.*Readyyes/,
    "the deployment's conditions, Deployed and Ready",
  )
  t.match(
    await page.locator('dl.facts').textContent(),
    /oci-layout:\/.*\/hello@sha256:[0-9a-f]{64}/,
    'the deployment shows the image the build made',
  )
  const imageSize =
    ((await api('GET', `/applications/${appId}`)).body as { deployment: { imageSizeBytes: number | null } }).deployment
      .imageSizeBytes ?? 0
  t.ok(imageSize > 0, `the API knows the image's size (${imageSize} bytes)`)
  t.match(
    await page.locator('dl.facts [data-testid=image-size]').textContent(),
    `(${imageSize.toLocaleString('en')} bytes)`,
    'and the deployment shows it',
  )
  await checkPage(t, page, 'build')

  // ---- invoke the component: the edited answer ----
  await page.getByRole('link', { name: 'Invoke' }).click()
  await page.getByLabel('Path').fill('/hello/world?x=1')
  await page.getByRole('button', { name: 'Send' }).click()
  await page.locator('[data-testid=invoke-status]').waitFor(WAIT)
  t.equal(await page.locator('[data-testid=invoke-status]').textContent(), '200', "the function's status")
  const body = (await page.locator('[data-testid=invoke-body]').textContent()) ?? ''
  t.match(body, /\n {2}"greeting": "edited in the console"/, 'the answer of the source as edited, pretty JSON')
  t.notMatch(body, /hello from/, "not the template's answer")
  t.match(body, /"path": "\/hello\/world\?x=1"/, 'the path as typed reached the component')
  await checkPage(t, page, 'invoke')
  // A binary body from a file goes as base64, and says so.
  await page.getByLabel('Method').selectOption('POST')
  await page
    .locator('form input[type=file]:not([accept])')
    .setInputFiles({ name: 'bytes.bin', mimeType: 'application/octet-stream', buffer: Buffer.from([0, 255, 7]) })
  await page.getByText('bytes.bin, 3 bytes, sent as base64').waitFor(WAIT)
  await page.getByRole('button', { name: 'Send' }).click()
  await page.locator('[data-testid=invoke-body]', { hasText: /"bytes": \[\s*0,\s*255,\s*7\s*\]/ }).waitFor(WAIT)
  t.pass("the file's bytes reached the component unchanged")

  // ---- logs and metrics tabs ----
  await page.getByRole('link', { name: 'Logs' }).click()
  await page.locator('pre[aria-label="Application log"]', { hasText: 'served POST /hello/world' }).waitFor(WAIT)
  t.pass("the component's own log line, in the application log")
  await checkPage(t, page, 'logs')
  await page.getByRole('link', { name: 'Metrics' }).click()
  await page.locator('figure[data-series=cpu] canvas').waitFor(WAIT)
  await page.locator('figure[data-series=requestRate] canvas').waitFor(WAIT)
  t.pass("the application's and the function's series, charted")
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
    label = (await chart.getByRole('img').getAttribute('aria-label')) ?? ''
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

  // ---- a read-only user: everything to read, nothing to change ----
  const viewerContext = await newContext(t, browser, { viewport: { width: 1280, height: 900 } })
  viewerContext.setDefaultTimeout(15_000)
  const viewer = await viewerContext.newPage()
  problems.push(...pageProblems(viewer))
  await viewer.goto(`${control.url}/`)
  await viewer.getByRole('button', { name: 'Sign in' }).click()
  await fillProviderPages(viewer, 'viewer')
  await viewer.getByRole('link', { name: 'hello' }).waitFor(WAIT)
  const viewerToken = await idTokenOf(viewer)
  t.match(
    (await control.call('GET', '/me', { token: viewerToken })).body,
    { role: 'read-only' },
    'the API takes the viewer for read-only',
  )
  t.equal(await viewer.getByTestId('role').textContent(), 'read-only', 'and the page says so beside the name')
  await viewer.getByTestId('read-only').waitFor(WAIT)
  const absent = async (where: string, names: Array<string | RegExp>): Promise<void> => {
    for (const name of names)
      t.equal(await viewer.getByRole('button', { name, exact: true }).count(), 0, `${where}: no ${String(name)} button`)
  }
  await absent('applications', ['Create', 'Delete hello'])
  t.equal(await viewer.getByLabel('Name').count(), 0, 'applications: no form to create one')
  await checkPage(t, viewer, 'read-only-applications')
  await viewer.getByRole('link', { name: 'hello' }).click()
  await viewer.locator('.editor[data-file="NOTES.md"] .cm-content').waitFor(WAIT)
  await absent('code', [
    'Save',
    'Add file',
    'Add function',
    'Rename',
    'Delete file',
    'Change route',
    'Delete function hello',
  ])
  t.equal(await viewer.getByText('Upload .tar.gz').count(), 0, 'code: no upload')
  t.equal(
    await viewer.getByRole('button', { name: 'Download .tar.gz' }).count(),
    1,
    'code: the download is reading, and stays',
  )
  t.equal(await viewer.locator('.cm-content').getAttribute('aria-readonly'), 'true', 'code: the editor is read-only')
  await viewer.locator('.cm-content').click()
  await viewer.keyboard.type('typed by a viewer')
  t.notMatch(await viewer.locator('.cm-content').textContent(), /typed by a viewer/, 'code: typing changes nothing')
  await checkPage(t, viewer, 'read-only-code')
  await viewer.getByRole('link', { name: 'Build & deploy' }).click()
  await viewer.locator('[data-testid=build-status]', { hasText: 'succeeded' }).waitFor(WAIT)
  await absent('build', ['Build', 'Deploy'])
  t.equal(await viewer.getByRole('button', { name: 'Refresh' }).count(), 1, 'build: refreshing is reading, and stays')
  await viewer.getByRole('link', { name: 'Invoke' }).click()
  await viewer.getByText('Invoking runs the function, which read-only access does not allow.').waitFor(WAIT)
  await absent('invoke', ['Send'])
  // The controls are gone, and the API still refuses what they would have sent.
  for (const [method, path, json] of [
    ['POST', '/applications', { name: 'other', language: 'js', runtime: 'wasmkube' }],
    ['PUT', `/applications/${appId}/functions/${fnId}/source`, { files: { 'src/index.js': '' } }],
    ['POST', `/applications/${appId}/builds`, undefined],
    ['POST', `/applications/${appId}/deploy`, undefined],
    ['POST', `/applications/${appId}/functions/${fnId}/invoke`, { method: 'GET', path: '/' }],
    ['DELETE', `/applications/${appId}`, undefined],
  ] as const) {
    const refused = await control.call(method, path, { token: viewerToken, ...(json === undefined ? {} : { json }) })
    t.equal(refused.status, 403, `the viewer's ${method} ${path}: 403`)
  }

  // ---- delete, confirmed ----
  await page.getByRole('button', { name: 'Delete hello' }).click()
  await page.getByRole('button', { name: 'Yes, delete' }).click()
  await page.getByText('No applications yet').waitFor(WAIT)
  t.same((await api('GET', '/applications')).body, [], 'deleted through the API')

  t.same(problems, [], 'no Content-Security-Policy violation or script error on any page')
  const logs = control.logText()
  t.notOk(
    logs.includes(stored.idToken ?? '-') || logs.includes(viewerToken),
    "no id token reaches the control plane's log",
  )
})

// Without --prometheus-url the control plane answers from its own series; a Prometheus that
// does not answer is what leaves a chart without data.
t.test('metrics with Prometheus down: the page says so in words', async (t) => {
  const closedPort = await freePort() // nothing listens there
  const { control } = await startRealClusterControl(t, 'pglite', {
    flags: ['--log-level', 'warn', '--prometheus-url', `http://127.0.0.1:${closedPort}`],
  })
  const browser = await launchBrowser(t)
  const page = await (await newContext(t, browser)).newPage()
  await page.goto(`${control.url}/`)
  await page.getByRole('heading', { name: 'Applications' }).waitFor(WAIT)
  const notice = page
    .locator('section', { has: page.getByRole('heading', { name: 'Platform metrics' }) })
    .getByRole('alert')
  await notice.waitFor(WAIT)
  t.match(
    await notice.textContent(),
    /^Metrics are not available: .*Prometheus unreachable/,
    'the 503 in words, saying why',
  )
})

t.test('an id token about to expire is refreshed with the refresh token before it is sent', async (t) => {
  // 30 s tokens: inside the minute before expiry the console refreshes, so at once here.
  const { oidc, flags } = await consoleSignIn(t, { idTokenTtlSeconds: 30 })
  const control = (await startRealClusterControl(t, 'pglite', { flags: [...flags, '--dev-insecure-skip-auth=false'] }))
    .control
  const browser = await launchBrowser(t)
  const context = await newContext(t, browser)
  context.setDefaultTimeout(15_000)
  const page = await context.newPage()
  const refreshes: string[] = []
  page.on('request', (request) => {
    if (request.url() === `${oidc.issuer}/token` && /grant_type=refresh_token/.test(request.postData() ?? ''))
      refreshes.push(request.url())
  })
  await page.goto(`${control.url}/`)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await fillProviderPages(page, 'grace')
  await page.getByText('No applications yet').waitFor(WAIT)
  const tokens = JSON.parse(await page.evaluate('sessionStorage.getItem("console.tokens") ?? "{}"')) as {
    idToken?: string
  }
  t.ok(refreshes.length >= 1, `refreshed through the token endpoint (${refreshes.length} times)`)
  const answer = await control.call('GET', '/applications', { token: tokens.idToken ?? '' })
  t.equal(answer.status, 200, 'the refreshed id token is one the control plane accepts')
})
