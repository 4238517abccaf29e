// The console's traces in a real Chromium: the SDK started as main.ts starts it with no collector
// (the in-memory store's processor, the HTTP, Fastify and pg instrumentations), a real build by
// the stand-in builder and an invoke through the real worker; the Traces page lists both, an
// invoke's trace is drawn as a waterfall (each bar offset by its span's start and as wide as its
// duration, each span under its parent), and a build's trace, opened from the application's
// Traces tab, lists its steps in order with their durations. Auth off: signing in is the console
// test's business; the tenants' rules are test/traces/embedded.test.ts's.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { startTracing } from '@session-relay/control/tracing/sdk'
import { createTraceStore, DEFAULT_TRACE_LIMITS } from '@session-relay/control/tracing/store'

t.setTimeout(300_000)

// Before anything imports Fastify or pg, as main.ts does: the instrumentations patch them as they load.
const store = createTraceStore({ traces: 20, ...DEFAULT_TRACE_LIMITS })
const sdk = startTracing({ exportOtlp: false, processors: [store.processor] })
t.teardown(() => sdk.shutdown())
const { createApp, firstFunction, startTestControl, until, untilDeployed } = await import('../helpers/control.js')
const { launchBrowser, newContext } = await import('../helpers/browser.js')
const { checkPage, pageProblems } = await import('../helpers/console.js')
const { toolchainCheck } = await import('@session-relay/control/local/programs')
const { writeStandIns } = await import('../fixtures/local-programs.js')
const { SHARED_COMPILED } = await import('../helpers/worker-probe.js')

const WAIT = { timeout: 15_000 }

type Span = { spanId: string; parentSpanId: string | null; name: string; startOffsetMs: number; durationMs: number }
type Trace = { traceId: string; durationMs: number; spans: Span[] }
type List = { traces: Array<{ traceId: string }> }

t.test('the traces page, an invoke as a waterfall, a build with its steps', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'console-traces-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const control = await startTestControl(
    t,
    'pglite',
    ['--dev-insecure-skip-auth', '--log-level', 'warn', '--runtime', 'local', '--local-cache-dir', SHARED_COMPILED],
    {
      deps: {
        local: { ...writeStandIns(dir), toolchains: toolchainCheck('', undefined, process.env.PATH) },
        traces: store,
      },
    },
  )
  // The stand-in builder's component is `f`: so is the function, by the application's name.
  const app = await createApp(control, 'f', { language: 'js' })
  const fn = firstFunction(app)
  await control.call('PUT', `/applications/${app.id}/functions/${fn.id}/source`, {
    json: { files: { 'index.js': 'export default 1\n' } },
  })
  t.equal((await control.call('POST', `/applications/${app.id}/builds`)).status, 202)
  await untilDeployed(control, app.id)
  t.equal(
    (
      await control.call('POST', `/applications/${app.id}/functions/${fn.id}/invoke`, {
        json: { method: 'GET', path: '/' },
      })
    ).status,
    200,
  )
  // Both traces as the API has them, once the build's last step and the invoke have ended.
  const traces: Trace[] = []
  await until(
    async () => {
      const list = (await control.call('GET', '/traces')).body as List
      traces.length = 0
      for (const { traceId } of list.traces)
        traces.push((await control.call('GET', `/traces/${traceId}`)).body as Trace)
      return (
        traces.some((trace) => trace.spans.some((span) => span.name === 'invoke')) &&
        traces.some((trace) => trace.spans.some((span) => span.name === 'build push'))
      )
    },
    60_000,
    'both traces kept',
  )
  const invoked = traces.find((trace) => trace.spans.some((span) => span.name === 'invoke')) as Trace
  const built = traces.find((trace) => trace.spans.some((span) => span.name === 'build')) as Trace

  const browser = await launchBrowser(t)
  const page = await (await newContext(t, browser, { viewport: { width: 1280, height: 900 } })).newPage()
  page.setDefaultTimeout(15_000)
  const problems = pageProblems(page)
  await page.goto(`${control.url}/#/`)
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Traces' }).click()
  await page.getByRole('heading', { name: 'Traces', level: 1 }).waitFor(WAIT)
  const rows = page.locator('table.traces tbody tr')
  await rows.first().waitFor(WAIT)
  t.same(
    await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-trace'))),
    [invoked.traceId, built.traceId],
    'newest first',
  )
  t.equal(await rows.first().getByRole('link', { name: 'f', exact: true }).count(), 1, "the application's name")
  await checkPage(t, page, 'traces-list')

  await page.locator(`tr[data-trace="${invoked.traceId}"] a`).first().click()
  await page.locator('ol.waterfall li').first().waitFor(WAIT)
  t.equal(await page.locator('ol.waterfall > li').count(), invoked.spans.length, 'a row per span')
  const total = invoked.durationMs
  const depthOf = (span: Span): number => {
    let depth = 0
    for (let at = span.parentSpanId; at !== null; depth++)
      at = invoked.spans.find((each) => each.spanId === at)?.parentSpanId ?? null
    return depth
  }
  for (const span of invoked.spans) {
    const row = page.locator(`ol.waterfall > li[data-span-id="${span.spanId}"]`)
    const bar = row.locator('rect')
    const x = parseFloat((await bar.getAttribute('x')) ?? 'NaN')
    const width = parseFloat((await bar.getAttribute('width')) ?? 'NaN')
    t.ok(Math.abs(x - (span.startOffsetMs / total) * 100) < 1e-6, `${span.name}: offset by its start`)
    t.ok(Math.abs(width - (span.durationMs / total) * 100) < 1e-6, `${span.name}: as wide as its duration`)
    t.equal(Number(await row.getAttribute('data-depth')), depthOf(span), `${span.name}: under its parent`)
  }
  const invokeRow = page.locator('ol.waterfall > li[data-span="invoke"]')
  t.ok(Number(await invokeRow.getAttribute('data-depth')) > 0, 'the invoke nested under the API request')
  // The rows are in tree order: the invoke comes after the request it is part of.
  const names = await page.locator('ol.waterfall > li').evaluateAll((lis) => lis.map((li) => li.dataset.span))
  t.equal(names[0], invoked.spans.find((span) => span.parentSpanId === null)?.name, 'the root first')
  await invokeRow.locator('summary').click()
  await invokeRow.getByText(fn.id).waitFor(WAIT)
  await checkPage(t, page, 'trace-invoke')

  // From the application's page, its Traces tab, to the build.
  await page.goto(`${control.url}/#/apps/${app.id}/code`)
  await page.getByRole('navigation', { name: 'Application' }).getByRole('link', { name: 'Traces' }).click()
  await page.locator(`tr[data-trace="${built.traceId}"] a`).click()
  const steps = page.locator('table.steps tbody tr')
  await steps.first().waitFor(WAIT)
  t.same(
    await steps.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-step'))),
    ['queue wait', 'bundle', 'componentize', 'push'],
    "the build's steps in order",
  )
  const durations = await steps.locator('td:nth-child(2)').allTextContents()
  t.ok(
    durations.every((text) => /^[0-9.]+ m?s$/.test(text)),
    `each with its duration: ${durations.join(', ')}`,
  )
  await checkPage(t, page, 'trace-build')
  t.same(problems, [], 'no Content-Security-Policy violation or script error')
})
