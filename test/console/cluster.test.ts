// The console on the real Kubernetes API server (test/helpers/kube-apiserver.ts; its registry a
// stand-in relock that answers another digest per image and names), signed in through the suite's OpenID provider:
// the Build & deploy tab says which build runs, as built, then re-locked with the variables'
// names (the digest that differs from the build's); and on every page a read-only user is
// offered no control that writes (every enabled control on the page is one that only reads),
// while a member is offered each of them.
import { createHash } from 'node:crypto'
import t from 'tap'
import type { Page } from 'playwright-core'
import { operateSpinApp, succeedJob } from '../fixtures/kube-real.js'
import { launchBrowser, newContext } from '../helpers/browser.js'
import { REPOSITORY, startRealClusterControl } from '../helpers/cluster.js'
import { checkPage, consoleSignIn, pageProblems } from '../helpers/console.js'
import { until } from '../helpers/control.js'

const WAIT = { timeout: 15_000 }
const BUILT = `${REPOSITORY}/hello@sha256:${'a'.repeat(64)}`

t.setTimeout(300_000)

async function signIn(page: Page, url: string, login: string): Promise<string> {
  await page.goto(`${url}/`)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.locator('input[name=login]').fill(login)
  await page.locator('input[name=password]').fill('any password')
  await page.getByRole('button', { name: 'Sign-in' }).click()
  await page.getByRole('button', { name: 'Continue' }).click() // consent
  await page.getByRole('heading', { name: 'Applications' }).waitFor(WAIT)
  return (
    (JSON.parse(await page.evaluate('sessionStorage.getItem("console.tokens") ?? "{}"')) as { idToken?: string })
      .idToken ?? ''
  )
}

type Control = { kind: string; name: string; disabled: boolean }

// Every control on the page as "kind: name": the buttons that pick a function or a file to
// look at are "pick". A string, evaluated in the page: this file is compiled without the DOM's types.
const CONTROLS = `[...document.querySelectorAll('button, input, select, textarea')].map((e) => {
  const label = e.getAttribute('aria-label') ?? (e.labels && e.labels[0] ? e.labels[0].textContent : null) ?? e.textContent ?? ''
  const pick = e.closest('ul[aria-label="Files"], ul.functions') !== null && e.classList.contains('link')
  const kind = pick ? 'pick' : e.tagName.toLowerCase() + (e.type === 'file' ? '[file]' : '')
  return { kind, name: label.replace(/\\s+/g, ' ').trim(), disabled: e.disabled }
})`

const controlsOf = (page: Page): Promise<Control[]> => page.evaluate<Control[]>(CONTROLS)

// What a read-only user may use: reading, looking, signing out. Anything else enabled writes.
const READING = [
  /^button: Sign out$/,
  /^button: Refresh$/,
  /^select: (Range|Step)\b/,
  /^button: Download \.tar\.gz$/,
  /^button: (Stop|Tail again)$/,
  /^button: Log of the build of /,
  /^pick: /,
]

/** The application's pages, each with what must be on it once loaded. */
const PAGES: Array<{ tab: string; loaded: (page: Page) => Promise<void> }> = [
  { tab: 'code', loaded: (page) => page.locator('.cm-content').waitFor(WAIT) },
  { tab: 'build', loaded: (page) => page.getByTestId('running-build').waitFor(WAIT) },
  {
    tab: 'invoke',
    loaded: (page) =>
      page.getByRole('link', { name: 'Invoke', exact: true }).and(page.locator('[aria-current=page]')).waitFor(WAIT),
  },
  { tab: 'logs', loaded: (page) => page.getByRole('heading', { name: 'Application log' }).waitFor(WAIT) },
  { tab: 'metrics', loaded: (page) => page.getByRole('heading', { name: /^Application: CPU/ }).waitFor(WAIT) },
  { tab: 'settings', loaded: (page) => page.getByLabel('Value of greeting').waitFor(WAIT) },
]

// What a member is offered on each page, by the control's kind and name.
const WRITES: Record<string, string[]> = {
  list: ['button: Create', 'button: Delete hello', 'input: Name', 'input: Description'],
  code: [
    'button: Save',
    'input[file]: Upload .tar.gz',
    'button: Add file',
    'input: New file',
    'button: Add function',
    'button: Change route',
    'button: Delete function hello',
    'button: Rename',
    'button: Delete file',
  ],
  build: ['button: Build', 'button: Deploy'],
  invoke: ['button: Send', 'textarea: Body (text)'],
  logs: [],
  metrics: [],
  settings: [
    'button: Save settings',
    'button: Add variable',
    'button: Replace the secret token',
    'button: Remove greeting',
    'input: Value of greeting',
    'textarea: Description',
  ],
}

t.test(
  'the build a deployment runs, re-locked; a read-only user is offered no write on any page, a member each',
  async (t) => {
    const { flags } = await consoleSignIn(t, { claims: { viewer: { groups: ['viewers'] } } })
    const relocked: string[] = []
    const cluster = await startRealClusterControl(t, 'pglite', {
      flags: [...flags, '--dev-insecure-skip-auth=false', '--readonly-claim', 'groups=viewers'],
      relock: async (image, names) => {
        const digest = createHash('sha256')
          .update(`${image} ${names.join(',')}`)
          .digest('hex')
        relocked.push(`${image.slice(0, image.indexOf('@'))}@sha256:${digest}`)
        return relocked.at(-1) as string
      },
    })
    const { control, kube } = cluster
    const browser = await launchBrowser(t)
    const context = await newContext(t, browser, { viewport: { width: 1280, height: 900 } })
    context.setDefaultTimeout(15_000)
    const page = await context.newPage()
    const problems = pageProblems(page)
    const token = await signIn(page, control.url, 'ada')
    const api = async (method: string, path: string, json?: unknown): Promise<Record<string, unknown>> => {
      const reply = await control.call(method, path, { token, ...(json === undefined ? {} : { json }) })
      if (reply.status >= 300) throw new Error(`${method} ${path}: ${reply.status} ${reply.text}`)
      return reply.body as Record<string, unknown>
    }

    // ---- an application deployed from its build, as built ----
    const app = (await api('POST', '/applications', { name: 'hello', language: 'js' })) as { id: string }
    await api('POST', `/applications/${app.id}/functions`, { name: 'api', route: '/api/...' })
    const build = (await api('POST', `/applications/${app.id}/builds`)) as { id: string }
    await succeedJob(kube, `build-${build.id}`, BUILT)
    await until(() => cluster.finished.some((b) => b.id === build.id), 10_000, 'the build finished and was deployed')
    await operateSpinApp(kube, 'hello')
    await page.goto(`${control.url}/#/apps/${app.id}/build`)
    const running = page.getByTestId('running-build')
    await running.waitFor(WAIT)
    t.match(
      await running.textContent(),
      new RegExp(`^build ${build.id.slice(0, 8)} of .*, as built$`),
      'the build named, as built',
    )
    t.equal(await page.getByTestId('deployed-build').count(), 1, 'and marked deployed in the builds table')

    // ---- variables: the image re-locked under another digest, the same build named ----
    await api('PATCH', `/applications/${app.id}`, {
      variables: { greeting: { value: 'hi' }, token: { secret: 'never-shown-3c1f' } },
    })
    t.equal(relocked.length, 1, 'the deploy re-locked the image with the names')
    await page.getByRole('button', { name: 'Refresh' }).first().click()
    await page.getByTestId('running-build').filter({ hasText: 're-locked' }).waitFor(WAIT)
    const digest = (relocked[0] as string).split('@')[1]?.slice(0, 'sha256:'.length + 12) ?? '-'
    t.match(
      await running.textContent(),
      new RegExp(
        `^build ${build.id.slice(0, 8)} of .+, re-locked with the variables' names: digest ${digest} differs from the build's sha256:a{12}$`,
      ),
      'which build, and that its digest differs because of the re-lock',
    )
    t.match(await page.locator('dl.facts').textContent(), relocked[0], 'the image that runs is shown too')
    await checkPage(t, page, 'cluster-build-relocked')

    // ---- a member: every write control on every page ----
    const visit = async (who: Page, tab: string): Promise<Control[]> => {
      if (tab === 'list') {
        await who.goto(`${control.url}/#/`)
        await who.getByRole('link', { name: 'hello' }).waitFor(WAIT)
        await who.locator('.apps td[data-label=Deployment]', { hasText: /ready/ }).waitFor(WAIT)
      } else {
        await who.goto(`${control.url}/#/apps/${app.id}/${tab}`)
        await PAGES.find((p) => p.tab === tab)?.loaded(who)
      }
      return controlsOf(who)
    }
    const tabs = ['list', ...PAGES.map((p) => p.tab)]
    for (const tab of tabs) {
      const offered = (await visit(page, tab)).map((c) => `${c.kind}: ${c.name}`)
      for (const write of WRITES[tab] ?? []) t.ok(offered.includes(write), `member, ${tab}: ${write}`)
    }

    // ---- a read-only user: every enabled control only reads ----
    const viewerContext = await newContext(t, browser, { viewport: { width: 1280, height: 900 } })
    viewerContext.setDefaultTimeout(15_000)
    const viewer = await viewerContext.newPage()
    problems.push(...pageProblems(viewer))
    await signIn(viewer, control.url, 'viewer')
    t.equal(await viewer.getByTestId('role').textContent(), 'read-only', 'the viewer is read-only')
    for (const tab of tabs) {
      const enabled = (await visit(viewer, tab)).filter((c) => !c.disabled).map((c) => `${c.kind}: ${c.name}`)
      t.same(
        enabled.filter((control) => !READING.some((allowed) => allowed.test(control))),
        [],
        `read-only, ${tab}: no enabled control that writes`,
      )
      t.not(enabled.length, 0, `read-only, ${tab}: the page was read (${enabled.length} reading controls)`)
      if (tab === 'code')
        t.equal(
          await viewer.locator('.cm-content').getAttribute('aria-readonly'),
          'true',
          'read-only, code: the editor is read-only',
        )
      if (tab !== 'list') await viewer.getByTestId('read-only').waitFor(WAIT)
    }
    await checkPage(t, viewer, 'cluster-read-only-settings')
    t.same(problems, [], 'no Content-Security-Policy violation or script error on any page')
  },
)

t.test('a member of several tenants names the one a new application goes to', async (t) => {
  const { flags } = await consoleSignIn(t, { claims: { multi: { roles: ['red', 'blue'] } } })
  const { control } = await startRealClusterControl(t, 'pglite', {
    flags: [...flags, '--dev-insecure-skip-auth=false', '--tenant-claim', 'roles'],
  })
  const browser = await launchBrowser(t)
  const context = await newContext(t, browser, { viewport: { width: 1280, height: 900 } })
  context.setDefaultTimeout(15_000)
  const page = await context.newPage()
  const token = await signIn(page, control.url, 'multi')
  // Without a tenant the API refuses: the form must not offer that request.
  const refused = await control.call('POST', '/applications', { token, json: { name: 'other', language: 'js' } })
  t.equal(refused.status, 400, `the API refuses a create without a tenant here (${refused.text})`)
  const tenant = page.getByLabel('Tenant')
  t.same(
    await tenant.locator('option').allTextContents(),
    ['choose one', 'red', 'blue'],
    "the form offers the caller's tenants",
  )
  t.equal(await tenant.getAttribute('required'), '', 'and one must be chosen')
  await page.getByLabel('Name').fill('hello')
  await tenant.selectOption('blue')
  await page.getByRole('button', { name: 'Create' }).click()
  await page.getByRole('heading', { name: /^hello/ }).waitFor(WAIT)
  t.match(
    (await control.call('GET', '/applications', { token })).body,
    [{ name: 'hello', tenant: 'blue' }],
    'created in the tenant chosen',
  )
  await checkPage(t, page, 'cluster-create-tenant')
})
