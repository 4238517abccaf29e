// The browser the console's and the client's tests drive: Debian's Chromium through
// playwright-core. Fails first when the package is missing or the two stop speaking CDP.
import t from 'tap'
import { launchBrowser, newContext, seriousAccessibilityViolations } from '../helpers/browser.js'

t.test("the suite's Chromium starts and renders a page", async (t) => {
  const browser = await launchBrowser(t)
  const page = await (await newContext(t, browser)).newPage()
  await page.setContent('<!doctype html><html lang="en"><title>ready</title><main><h1>ready</h1></main></html>')
  t.equal(await page.textContent('h1'), 'ready')
  t.same(await seriousAccessibilityViolations(page), [], 'axe-core runs in the page')
  await page.setContent('<!doctype html><html lang="en"><title>form</title><main><input type="text"></main></html>')
  t.match(await seriousAccessibilityViolations(page), [/^label at /], 'and names what it finds')
})
