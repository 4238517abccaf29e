// A real Chromium for the browser tests: Debian's `chromium` package (installed by
// scripts/install-test-tools.sh) driven over CDP by playwright-core, which ships no browser of
// its own. One browser per test file, closed when the file's test ends; pages come from fresh
// contexts so cookies and storage never leak from one test into the next.
import axe from 'axe-core'
import { existsSync } from 'node:fs'
import { chromium } from 'playwright-core'
import type { Browser, BrowserContext, BrowserContextOptions, Page } from 'playwright-core'
import type { Test } from 'tap'

const axeSource = axe.source
const CANDIDATES = ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome']

function chromiumPath(): string {
  const configured = process.env.CHROMIUM_PATH
  if (configured !== undefined && configured !== '') return configured
  const found = CANDIDATES.find((path) => existsSync(path))
  if (found === undefined)
    throw new Error(
      `no Chromium found (looked at ${CANDIDATES.join(', ')}); run scripts/install-test-tools.sh or set CHROMIUM_PATH`,
    )
  return found
}

export async function launchBrowser(t: Test): Promise<Browser> {
  const browser = await chromium.launch({
    executablePath: chromiumPath(),
    // The test machine runs as root in a container: Chromium's sandbox needs user namespaces
    // it may not have, and /dev/shm is small there.
    args: ['--no-sandbox', '--disable-dev-shm-usage'],
  })
  t.teardown(() => browser.close())
  return browser
}

export async function newContext(
  t: Test,
  browser: Browser,
  options: BrowserContextOptions = {},
): Promise<BrowserContext> {
  const context = await browser.newContext(options)
  t.teardown(() => context.close())
  return context
}

/** axe-core's serious and critical findings on the page as it is now (ids and their targets). */
export async function seriousAccessibilityViolations(page: Page): Promise<string[]> {
  await page.addScriptTag({ content: axeSource })
  const results = await page.evaluate(async () => {
    const axe = (
      globalThis as unknown as {
        axe: {
          run: () => Promise<{
            violations: Array<{ id: string; impact: string | null; nodes: Array<{ target: unknown[] }> }>
          }>
        }
      }
    ).axe
    return (await axe.run()).violations
  })
  return results
    .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
    .map((violation) => `${violation.id} at ${violation.nodes.map((node) => JSON.stringify(node.target)).join(', ')}`)
}
