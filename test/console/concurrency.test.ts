// The console's Settings tab for an application's share of the shared worker: the platform's
// values as placeholders (GET /policy), a value above them refused in the API's words with the
// field marked, one within sent alone and shown after the save, and a field emptied to go back
// to the platform's. Auth off: signing in is the settings test's business.
import t from 'tap'
import type { Request } from 'playwright-core'
import { launchBrowser, newContext } from '../helpers/browser.js'
import { checkPage } from '../helpers/console.js'
import { createApp, startTestControl } from '../helpers/control.js'

const WAIT = { timeout: 15_000 }

t.setTimeout(120_000)

t.test("concurrency: the platform's values, a 400 above them, a value saved, then emptied", async (t) => {
  const control = await startTestControl(t, 'pglite', [
    '--dev-insecure-skip-auth',
    '--log-level',
    'warn',
    '--local-max-concurrent-requests',
    '10',
    '--local-max-queued-requests',
    '20',
  ])
  const app = await createApp(control, 'shared')
  const browser = await launchBrowser(t)
  const page = await (await newContext(t, browser)).newPage()
  page.setDefaultTimeout(15_000)
  const patches: unknown[] = []
  page.on('request', (request: Request) => {
    if (request.method() === 'PATCH') patches.push(JSON.parse(request.postData() ?? '{}'))
  })
  await page.goto(`${control.url}/#/apps/${app.id}/settings`)
  const running = page.getByLabel('Requests running at once')
  const waiting = page.getByLabel('Requests waiting')
  await running.waitFor(WAIT)
  t.equal(await running.inputValue(), '', "empty: the platform's value")
  t.equal(await running.getAttribute('placeholder'), "the platform's: 10")
  t.equal(await waiting.getAttribute('placeholder'), "the platform's: 20")

  const save = page.getByRole('button', { name: 'Save settings' })
  await running.fill('11')
  await save.click()
  await page.getByText(/concurrency\.maxRunning: 11 is above the platform's largest 10/).waitFor(WAIT)
  t.equal(await running.getAttribute('aria-invalid'), 'true', 'the field the 400 names is marked')
  await checkPage(t, page, 'settings-concurrency')

  await running.fill('3')
  await save.click()
  await page.getByText('Settings saved.').waitFor(WAIT)
  t.equal(await page.getByLabel('Requests running at once').inputValue(), '3', 'shown after the save')
  t.equal(await page.getByLabel('Requests waiting').inputValue(), '', "the other still the platform's")

  await page.getByLabel('Requests running at once').fill('')
  await save.click()
  await page.getByText('Settings saved.').waitFor(WAIT)
  t.same(patches, [{ concurrency: { maxRunning: 11 } }, { concurrency: { maxRunning: 3 } }, { concurrency: {} }])
  const stored = (await control.call('GET', `/applications/${app.id}`)).body as { concurrency: unknown }
  t.same(stored.concurrency, { maxRunning: 10, maxQueued: 20 }, "the platform's again")
})
