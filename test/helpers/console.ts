// The web console's tests: its page in Chromium, a screenshot of each page kept under
// .cache/screenshots (a test artifact, gitignored), and axe-core's accessibility rules run in
// the page. axe is evaluated over the DevTools protocol, which the console's
// Content-Security-Policy (scripts from the origin only) does not govern, so the policy stays on.
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import axe from 'axe-core'
import type { Page } from 'playwright-core'
import type { Test } from 'tap'
import { startOidcProvider } from '../fixtures/oidc-provider.js'
import type { OidcFixture } from '../fixtures/oidc-provider.js'
import { startTestControl } from './control.js'
import { freePort } from './ports.js'

const SCREENSHOTS = new URL('../../.cache/screenshots/', import.meta.url).pathname
// axe-core's whole script as text, to run inside the page.
const AXE = axe.source

type Violation = { id: string; impact: string | null; help: string; nodes: string[] }

/** Screenshot `name`, then fail the test on any serious or critical axe violation. */
export async function checkPage(t: Test, page: Page, name: string): Promise<void> {
  mkdirSync(SCREENSHOTS, { recursive: true })
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true })
  await page.evaluate(AXE)
  // A string, evaluated in the page: this file is compiled without the DOM's types.
  const violations = await page.evaluate<
    Violation[]
  >(`axe.run(document, { resultTypes: ['violations'] }).then((result) => result.violations.map((v) => ({
    id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 3).map((n) => JSON.stringify(n.target)),
  })))`)
  const serious = violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')
  t.same(serious, [], `${name}: no serious or critical accessibility violation (axe-core)`)
}

/** Collects what the page reports as Content-Security-Policy violations and script errors. */
export function pageProblems(page: Page): string[] {
  const problems: string[] = []
  page.on('console', (message) => {
    if (message.type() === 'error' && /Content Security Policy|Refused to/i.test(message.text()))
      problems.push(message.text())
  })
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`))
  return problems
}

/**
 * A real OpenID provider the console signs in through (authorization code + PKCE) with the
 * browser's logins given `claims`, the port the control plane will listen on, and the flags that
 * put it there behind that provider with the console's client.
 */
export async function consoleSignIn(
  t: Test,
  options: { claims?: Record<string, Record<string, unknown>>; idTokenTtlSeconds?: number } = {},
): Promise<{ port: number; oidc: OidcFixture; flags: string[] }> {
  const port = await freePort()
  const oidc = await startOidcProvider({
    browserClient: {
      redirectUri: `http://127.0.0.1:${port}/`,
      ...(options.claims !== undefined ? { claims: options.claims } : {}),
    },
    ...(options.idTokenTtlSeconds !== undefined ? { idTokenTtlSeconds: options.idTokenTtlSeconds } : {}),
  })
  t.teardown(() => oidc.close())
  const flags = [
    '--addr',
    `127.0.0.1:${port}`,
    '--log-level',
    'warn',
    '--oidc-issuer',
    oidc.issuer,
    '--oidc-audience',
    oidc.browserClientId,
    '--console-client-id',
    oidc.browserClientId,
  ]
  return { port, oidc, flags }
}

/**
 * A control plane on the local runtime whose console signs in through a real OpenID provider;
 * the login `viewer` is read-only. `flags` come after these.
 */
export async function startConsoleControl(t: Test, flags: string[] = []) {
  const { port, oidc, flags: signIn } = await consoleSignIn(t, { claims: { viewer: { groups: ['viewers'] } } })
  const control = await startTestControl(t, 'pglite', [
    ...signIn,
    '--runtime',
    'local',
    '--readonly-claim',
    'groups=viewers',
    ...flags,
  ])
  return { port, oidc, control }
}
