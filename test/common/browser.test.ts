// The browser the console's and the client's tests drive: Debian's Chromium through
// playwright-core. Fails first when the package is missing or the two stop speaking CDP.
import t from 'tap'
import { launchBrowser, newContext } from '../helpers/browser.js'

t.test('the suite\'s Chromium starts and renders a page', async (t) => {
  const browser = await launchBrowser(t)
  const page = await (await newContext(t, browser)).newPage()
  await page.setContent('<main><h1>ready</h1></main>')
  t.equal(await page.textContent('h1'), 'ready')
})
