// The console's Settings tab in a real Chromium against a control plane on the local runtime
// with a `max` resource policy: sign in, create an application, set replicas and a CPU limit
// above the platform's cap and read the API's 400 naming the field, fix it, add a variable and
// a secret, save, reload and see what is stored (the secret only said to be set, its value
// nowhere in the page), and the API agrees. A read-only user sees the settings and no control
// to change them; under a `forced` policy the resources are the platform's and never sent.
import t from 'tap'
import type { Page, Request } from 'playwright-core'
import { launchBrowser, newContext } from '../helpers/browser.js'
import { checkPage, pageProblems, startConsoleControl } from '../helpers/console.js'
import { createApp, startTestControl } from '../helpers/control.js'

const WAIT = { timeout: 15_000 }
const SECRET = 'tok-9f3a-never-shown'

t.setTimeout(240_000)

async function fillProviderPages(page: Page, login: string): Promise<void> {
  await page.locator('input[name=login]').fill(login)
  await page.locator('input[name=password]').fill('any password')
  await page.getByRole('button', { name: 'Sign-in' }).click()
  await page.getByRole('button', { name: 'Continue' }).click() // consent
}

async function signIn(page: Page, url: string, login: string): Promise<string> {
  await page.goto(`${url}/`)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await fillProviderPages(page, login)
  await page.getByRole('heading', { name: 'Applications' }).waitFor(WAIT)
  return (
    (JSON.parse(await page.evaluate('sessionStorage.getItem("console.tokens") ?? "{}"')) as { idToken?: string })
      .idToken ?? ''
  )
}

/** The bodies of the PATCH requests the page sends, parsed. */
function patchesOf(page: Page): Array<Record<string, unknown>> {
  const patches: Array<Record<string, unknown>> = []
  page.on('request', (request: Request) => {
    if (request.method() === 'PATCH') patches.push(JSON.parse(request.postData() ?? '{}') as Record<string, unknown>)
  })
  return patches
}

t.test(
  'settings: a 400 naming the field, then replicas, a resource, a variable and a secret saved and shown after a reload',
  async (t) => {
    const { control } = await startConsoleControl(t, [
      '--resource-policy',
      'max',
      '--resource-cpu-limit',
      '1',
      '--resource-memory-limit',
      '256Mi',
    ])
    const browser = await launchBrowser(t)
    const context = await newContext(t, browser, { viewport: { width: 1280, height: 900 } })
    context.setDefaultTimeout(15_000)
    const page = await context.newPage()
    const problems = pageProblems(page)
    const patches = patchesOf(page)
    const token = await signIn(page, control.url, 'ada')
    const getApp = async (id: string) =>
      (await control.call('GET', `/applications/${id}`, { token })).body as Record<string, unknown>

    // ---- create, open Settings ----
    await page.getByLabel('Name').fill('hello')
    await page.getByLabel('Language').selectOption('js')
    await page.getByRole('button', { name: 'Create' }).click()
    await page.getByRole('heading', { name: /^hello/ }).waitFor(WAIT)
    const appId = ((await control.call('GET', '/applications', { token })).body as Array<{ id: string }>)[0]
      ?.id as string
    await page.getByRole('link', { name: 'Settings' }).click()
    await page.getByRole('heading', { name: 'Settings' }).waitFor(WAIT)
    t.equal(
      await page.getByText('at most 1', { exact: true }).count(),
      1,
      "the platform's CPU cap beside the CPU limit",
    )
    t.equal(
      await page.getByText('at most 256Mi', { exact: true }).count(),
      1,
      'and the memory cap beside the memory limit',
    )

    // ---- replicas 3 and a CPU limit over the cap: the API's 400, the field named and marked ----
    const replicas = page.getByLabel('Replicas', { exact: true })
    const cpuLimit = page.getByLabel('CPU limit')
    t.equal(await cpuLimit.inputValue(), '', "the cap is the platform's value, not one the application set")
    t.equal(await cpuLimit.getAttribute('placeholder'), "the platform's: 1", 'and is said to apply')
    await replicas.fill('3')
    await cpuLimit.fill('2')
    await page.getByRole('button', { name: 'Save settings' }).click()
    const alert = page.locator('form.settings').getByRole('alert')
    await alert.waitFor(WAIT)
    t.equal(
      await alert.textContent(),
      "Invalid input: resources.cpuLimit: 2 is above the platform's maximum 1",
      'the 400 in words, naming the field and the cap',
    )
    t.equal(await cpuLimit.getAttribute('aria-invalid'), 'true', 'the CPU limit is marked invalid')
    t.equal(await cpuLimit.getAttribute('aria-describedby'), 'settings-error', 'and points at the sentence')
    t.equal(await replicas.getAttribute('aria-invalid'), null, 'the other fields are not')
    t.match(await getApp(appId), { replicas: 1 }, 'nothing was stored')
    await checkPage(t, page, 'settings-invalid')

    // ---- fix it, add a variable and a secret, save ----
    await cpuLimit.fill('500m')
    await page.getByRole('button', { name: 'Add variable' }).click()
    await page.getByLabel('Variable name').last().fill('greeting')
    await page.getByLabel('Value of greeting').fill('hello there')
    await page.getByRole('button', { name: 'Add variable' }).click()
    await page.getByLabel('Variable name').last().fill('api_token')
    await page.getByLabel('Kind of api_token').selectOption('secret')
    await page.getByLabel('Secret value of api_token').fill(SECRET)
    await page.getByRole('button', { name: 'Save settings' }).click()
    await page.getByText('Settings saved.').waitFor(WAIT)
    t.equal(await alert.count(), 0, 'the error is gone')
    t.same(
      patches.map((patch) => Object.keys(patch).sort()),
      [
        ['replicas', 'resources'],
        ['replicas', 'resources', 'variables'],
      ],
      'each save sends one PATCH with only the changed fields',
    )
    t.same(
      patches[1],
      {
        replicas: 3,
        resources: { cpuLimit: '500m' },
        variables: { greeting: { value: 'hello there' }, api_token: { secret: SECRET } },
      },
      'the second as typed',
    )

    // ---- reload: what is stored, the secret only said to be set ----
    await page.reload()
    await page.getByRole('heading', { name: 'Settings' }).waitFor(WAIT)
    await page.getByLabel('Value of greeting').waitFor(WAIT)
    t.equal(await page.getByLabel('Replicas', { exact: true }).inputValue(), '3', 'replicas 3')
    t.equal(await page.getByLabel('CPU limit').inputValue(), '500m', 'the CPU limit')
    t.equal(
      await page.getByLabel('Memory limit').inputValue(),
      '',
      "the memory limit still the platform's, not pinned by the save",
    )
    t.equal(await page.getByLabel('Value of greeting').inputValue(), 'hello there', "the variable's value")
    t.equal(
      await page.locator('tr[data-variable=api_token]').getByTestId('secret-set').textContent(),
      'secret, set',
      'the secret shown as set',
    )
    t.equal(await page.getByLabel('Secret value of api_token').count(), 0, 'with no field holding it')
    t.notOk((await page.content()).includes(SECRET), "the secret's value is nowhere in the page's HTML")
    t.match(
      await getApp(appId),
      {
        replicas: 3,
        resources: { cpuLimit: '500m', memoryLimit: '256Mi' },
        variables: { greeting: { value: 'hello there' }, api_token: { secret: true } },
      },
      "the API's GET agrees (the memory limit in force, the platform's)",
    )
    await checkPage(t, page, 'settings')

    // ---- change the plain value only: the secret is kept, never sent again ----
    await page.getByLabel('Value of greeting').fill('hi')
    await page.getByRole('button', { name: 'Save settings' }).click()
    await page.getByText('Settings saved.').waitFor(WAIT)
    t.same(
      patches[2],
      { variables: { greeting: { value: 'hi' }, api_token: { secret: true } } },
      'the secret goes as {secret: true}: keep it',
    )
    t.match(await getApp(appId), { variables: { greeting: { value: 'hi' }, api_token: { secret: true } } }, 'kept')

    // ---- a read-only user: every setting to read, nothing to change ----
    const viewerContext = await newContext(t, browser, { viewport: { width: 1280, height: 900 } })
    viewerContext.setDefaultTimeout(15_000)
    const viewer = await viewerContext.newPage()
    problems.push(...pageProblems(viewer))
    await signIn(viewer, control.url, 'viewer')
    await viewer.goto(`${control.url}/#/apps/${appId}/settings`)
    await viewer.getByLabel('Value of greeting').waitFor(WAIT)
    t.equal(await viewer.getByLabel('Replicas', { exact: true }).inputValue(), '3', 'the viewer sees the replicas')
    t.equal(
      await viewer.locator('tr[data-variable=api_token]').getByTestId('secret-set').count(),
      1,
      'and that the secret is set',
    )
    for (const name of ['Save settings', 'Add variable', /^Remove/, /^Replace/]) {
      t.equal(await viewer.getByRole('button', { name }).count(), 0, `no ${String(name)} button`)
    }
    t.ok(await viewer.getByLabel('Replicas', { exact: true }).isDisabled(), 'the fields are disabled')
    t.ok(await viewer.getByLabel('Value of greeting').isDisabled(), 'the variables too')
    await checkPage(t, viewer, 'read-only-settings')

    t.same(problems, [], 'no Content-Security-Policy violation or script error')
    t.notOk(control.logText().includes(SECRET), "the secret's value is in no log line")
  },
)

t.test("settings under a forced policy: the platform's values, read-only, never sent", async (t) => {
  const control = await startTestControl(t, 'pglite', [
    '--dev-insecure-skip-auth',
    '--log-level',
    'warn',
    '--resource-policy',
    'forced',
    '--resource-cpu-limit',
    '1',
  ])
  const app = await createApp(control, 'forced')
  const browser = await launchBrowser(t)
  const page = await (await newContext(t, browser)).newPage()
  page.setDefaultTimeout(15_000)
  const patches = patchesOf(page)
  await page.goto(`${control.url}/#/apps/${app.id}/settings`)
  const cpuLimit = page.getByLabel('CPU limit')
  await cpuLimit.waitFor(WAIT)
  t.equal(await cpuLimit.inputValue(), '1', "the platform's CPU limit")
  t.not(await cpuLimit.getAttribute('readonly'), null, 'read-only')
  t.equal(await page.getByText('set by the platform', { exact: true }).count(), 1, "and said to be the platform's")
  await page.getByLabel('Replicas', { exact: true }).fill('2')
  await page.getByRole('button', { name: 'Save settings' }).click()
  await page.getByText('Settings saved.').waitFor(WAIT)
  t.same(patches, [{ replicas: 2 }], 'only the replicas sent, no resources')
})

t.test(
  'settings: autoscaling and its 400, the description, a Secret reference, a secret replaced, a row removed, a name twice',
  async (t) => {
    const control = await startTestControl(t, 'pglite', [
      '--dev-insecure-skip-auth',
      '--runtime',
      'local',
      '--log-level',
      'warn',
    ])
    const app = await createApp(control, 'scaled', { language: 'js' })
    const set = await control.call('PATCH', `/applications/${app.id}`, {
      json: { variables: { old_one: { value: 'x' }, token: { secret: 'first-secret' } } },
    })
    t.equal(set.status, 200, 'a variable and a secret stored through the API')
    const browser = await launchBrowser(t)
    const page = await (await newContext(t, browser, { viewport: { width: 1280, height: 900 } })).newPage()
    page.setDefaultTimeout(15_000)
    const problems = pageProblems(page)
    const patches = patchesOf(page)
    const getApp = async () => (await control.call('GET', `/applications/${app.id}`)).body as Record<string, unknown>
    await page.goto(`${control.url}/#/apps/${app.id}/settings`)
    await page.getByLabel('Value of old_one').waitFor(WAIT)

    // ---- autoscaling without a CPU request: the API's 400 marks the checkbox ----
    await page.getByLabel('Description').fill('scales on CPU')
    const autoscaling = page.getByLabel('Autoscaling on CPU')
    await autoscaling.check()
    t.ok(await page.getByLabel('Replicas', { exact: true }).isDisabled(), 'the replica count is off while autoscaling')
    await page.getByLabel('Minimum replicas').fill('2')
    await page.getByLabel('Maximum replicas').fill('5')
    await page.getByLabel('Target CPU %').fill('70')
    await page.getByRole('button', { name: 'Save settings' }).click()
    const alert = page.locator('form.settings').getByRole('alert')
    await alert.waitFor(WAIT)
    t.match(await alert.textContent(), /^Invalid input: autoscaling: needs resources\.cpuRequest/, 'the 400 in words')
    t.equal(await autoscaling.getAttribute('aria-invalid'), 'true', 'the autoscaling checkbox is marked')
    t.equal(await page.getByLabel('Minimum replicas').getAttribute('aria-invalid'), 'true', 'and the fields inside it')
    await page.getByLabel('CPU request').fill('100m')
    await page.getByRole('button', { name: 'Save settings' }).click()
    await page.getByText('Settings saved.').waitFor(WAIT)
    t.same(
      patches[1],
      {
        description: 'scales on CPU',
        autoscaling: { minReplicas: 2, maxReplicas: 5, targetCpuPercent: 70 },
        resources: { cpuRequest: '100m' },
      },
      'one PATCH: description, autoscaling and the request',
    )
    t.match(
      await getApp(),
      {
        description: 'scales on CPU',
        autoscaling: { minReplicas: 2, maxReplicas: 5, targetCpuPercent: 70 },
        resources: { cpuRequest: '100m' },
      },
      'stored',
    )

    // ---- variables: replace the secret, remove a row, reference an existing Secret ----
    await page.getByRole('button', { name: 'Replace the secret token' }).click()
    await page.getByLabel('Secret value of token').fill('second-secret')
    await page.getByRole('button', { name: 'Remove old_one' }).click()
    await page.getByRole('button', { name: 'Add variable' }).click()
    await page.getByLabel('Variable name').fill('db_password')
    await page.getByLabel('Kind of db_password').selectOption('secretRef')
    await page.getByLabel('Secret name of db_password').fill('db')
    await page.getByLabel('Secret key of db_password').fill('password')
    await page.getByRole('button', { name: 'Save settings' }).click()
    await page.locator('tr[data-variable=token]').getByTestId('secret-set').waitFor(WAIT)
    t.same(
      patches[2],
      {
        variables: { token: { secret: 'second-secret' }, db_password: { secretRef: { name: 'db', key: 'password' } } },
      },
      'only the variables, the new secret value with them',
    )
    t.match(
      await getApp(),
      { variables: { token: { secret: true }, db_password: { secretRef: { name: 'db', key: 'password' } } } },
      'stored',
    )
    t.notOk('old_one' in ((await getApp()).variables as Record<string, unknown>), 'the removed row is gone')
    t.equal(await page.getByLabel('Secret name of db_password').inputValue(), 'db', 'the reference shown as stored')
    await checkPage(t, page, 'settings-autoscaling')
    await page.setViewportSize({ width: 390, height: 844 })
    t.ok(
      await page.evaluate<boolean>('document.documentElement.scrollWidth <= 390'),
      'at phone width one column: nothing wider than the screen',
    )
    await checkPage(t, page, 'settings-phone')
    await page.setViewportSize({ width: 1280, height: 900 })

    // ---- a name twice: said in words, nothing sent ----
    await page.getByRole('button', { name: 'Add variable' }).click()
    await page.getByLabel('Variable name').fill('db_password')
    await page.getByRole('button', { name: 'Save settings' }).click()
    await alert.waitFor(WAIT)
    t.equal(
      await alert.textContent(),
      'Invalid input: variables.db_password: the name is given twice',
      'the mistake in words',
    )
    t.equal(await page.getByLabel('Variable name').getAttribute('aria-invalid'), 'true', 'the name typed is marked')
    t.equal(patches.length, 3, 'no request sent')
    t.same(problems, [], 'no Content-Security-Policy violation or script error')
    t.notOk(
      control.logText().includes('second-secret') || control.logText().includes('first-secret'),
      'no secret value in the log',
    )
  },
)
