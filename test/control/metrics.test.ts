// The control plane's own /metrics: requests counted by route pattern and status, finished
// builds by result with their durations, the process metrics; read as Prometheus would.
// prometheus.test.ts has a real Prometheus scrape it.
import t from 'tap'
import type { Test } from 'tap'
import { readFileSync } from 'node:fs'
import { createControlMetrics } from '@session-relay/control/metrics/control-metrics'
import { applicationQueries, functionQueries, overviewQueries } from '@session-relay/control/metrics/queries'
import type { BuildT } from '@session-relay/control/model/resources'
import { createApp, startTestControl } from '../helpers/control.js'
import type { TestControl } from '../helpers/control.js'

const UNKNOWN_ID = '00000000-0000-4000-8000-000000000000'

async function scrape(t: Test, control: TestControl): Promise<{ contentType: string | null; text: string }> {
  const response = await fetch(`${control.url}/metrics`)
  t.equal(response.status, 200, 'GET /metrics')
  return { contentType: response.headers.get('content-type'), text: await response.text() }
}

/** The value of the one sample with exactly these labels (in prom-client's order), or undefined. */
function sample(text: string, name: string, labels: string): number | undefined {
  const line = text
    .split('\n')
    .find((l) => l.startsWith(`${name}{${labels}} `) || (labels === '' && l.startsWith(`${name} `)))
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1))
}

function build(id: number, status: BuildT['status'], seconds: number | null): BuildT {
  const finishedAt = Date.parse('2026-01-01T00:10:00.000Z')
  return {
    id: `00000000-0000-4000-8000-${String(id).padStart(12, '0')}`,
    status,
    imageRef: status === 'succeeded' ? 'registry.example/app:1' : null,
    imageSizeBytes: null,
    createdAt: new Date(finishedAt - (seconds ?? 0) * 1000).toISOString(),
    finishedAt: seconds === null ? null : new Date(finishedAt).toISOString(),
    error: status === 'failed' ? 'compile error' : null,
  }
}

t.test('HTTP requests by method, route pattern and status; never the raw URL', async (t) => {
  const control = await startTestControl(t, 'pglite')
  const app = await createApp(control)
  await control.call('GET', `/applications/${app.id}`)
  await control.call('GET', `/applications/${UNKNOWN_ID}`)
  await control.call('GET', `/applications/${UNKNOWN_ID}`)
  await control.call('POST', '/applications', { json: { name: 'Bad Name' } })
  await control.call('GET', '/no/such/path')
  await control.call('GET', '/healthz')

  const { contentType, text } = await scrape(t, control)
  t.match(contentType, /^text\/plain; version=0\.0\.4/, 'Prometheus text format')
  const requests = (labels: string): number | undefined => sample(text, 'platform_http_requests_total', labels)
  t.equal(requests('method="POST",route="/api/v1/applications",status_code="201"'), 1)
  t.equal(requests('method="POST",route="/api/v1/applications",status_code="400"'), 1)
  t.equal(requests('method="GET",route="/api/v1/applications/:appId",status_code="200"'), 1)
  t.equal(requests('method="GET",route="/api/v1/applications/:appId",status_code="404"'), 2)
  t.equal(requests('method="GET",route="unmatched",status_code="404"'), 1, 'paths no route matches share one series')
  t.equal(requests('method="GET",route="/healthz",status_code="200"'), 1)
  t.notMatch(text, app.id, 'no id from a path')
  t.notMatch(text, UNKNOWN_ID)
  t.notMatch(text, '/no/such/path')
  t.match(text, /^# TYPE platform_http_requests_total counter$/m)

  const again = await scrape(t, control)
  t.equal(
    sample(again.text, 'platform_http_requests_total', 'method="GET",route="/metrics",status_code="200"'),
    1,
    'the scrape itself counts once it is answered',
  )

  for (const name of [
    'process_cpu_user_seconds_total',
    'process_resident_memory_bytes',
    'process_start_time_seconds',
    'nodejs_heap_size_used_bytes',
    'nodejs_eventloop_lag_seconds',
  ]) {
    t.match(text, new RegExp(`^${name} \\d`, 'm'), `default process metric ${name}`)
  }
})

t.test('finished builds by result, with durations from createdAt to finishedAt, each build once', async (t) => {
  const control = await startTestControl(t, 'pglite')
  const before = (await scrape(t, control)).text
  t.equal(
    sample(before, 'platform_builds_finished_total', 'result="succeeded"'),
    0,
    'zero before the first build, so rate() sees it',
  )
  t.equal(sample(before, 'platform_builds_finished_total', 'result="failed"'), 0)
  t.equal(sample(before, 'platform_build_duration_seconds_count', 'result="succeeded"'), 0)

  const { metrics } = control.server
  metrics.recordBuildFinished(build(1, 'succeeded', 30))
  metrics.recordBuildFinished(build(2, 'succeeded', 90))
  metrics.recordBuildFinished(build(3, 'failed', 12.5))
  metrics.recordBuildFinished(build(1, 'succeeded', 30)) // the same build seen again
  metrics.recordBuildFinished(build(4, 'pending', null))
  metrics.recordBuildFinished(build(5, 'running', null))

  const { text } = await scrape(t, control)
  t.equal(sample(text, 'platform_builds_finished_total', 'result="succeeded"'), 2)
  t.equal(sample(text, 'platform_builds_finished_total', 'result="failed"'), 1)
  t.equal(sample(text, 'platform_build_duration_seconds_sum', 'result="succeeded"'), 120)
  t.equal(sample(text, 'platform_build_duration_seconds_count', 'result="succeeded"'), 2)
  t.equal(sample(text, 'platform_build_duration_seconds_bucket', 'le="30",result="succeeded"'), 1)
  t.equal(sample(text, 'platform_build_duration_seconds_bucket', 'le="60",result="succeeded"'), 1)
  t.equal(sample(text, 'platform_build_duration_seconds_bucket', 'le="120",result="succeeded"'), 2)
  t.equal(sample(text, 'platform_build_duration_seconds_sum', 'result="failed"'), 12.5)
  t.match(text, /^# TYPE platform_build_duration_seconds histogram$/m)
})

t.test('a build without finishedAt ends now; one started in the future counts as 0 s', async (t) => {
  const metrics = createControlMetrics()
  const unfinished = {
    ...build(1, 'failed', 0),
    createdAt: new Date(Date.now() - 5_000).toISOString(),
    finishedAt: null,
  }
  metrics.recordBuildFinished(unfinished)
  metrics.recordBuildFinished({
    ...build(2, 'succeeded', 0),
    createdAt: new Date(Date.now() + 60_000).toISOString(),
    finishedAt: new Date().toISOString(),
  })
  const text = await metrics.render()
  const failed = sample(text, 'platform_build_duration_seconds_sum', 'result="failed"') as number
  t.ok(failed >= 5 && failed < 10, `about 5 s (${failed})`)
  t.equal(
    sample(text, 'platform_build_duration_seconds_sum', 'result="succeeded"'),
    0,
    'clock skew never makes a negative duration',
  )
})

t.test('each control plane counts its own requests', async (t) => {
  const one = await startTestControl(t, 'pglite')
  const two = await startTestControl(t, 'pglite')
  await one.call('GET', '/applications')
  t.equal(
    sample(
      (await scrape(t, one)).text,
      'platform_http_requests_total',
      'method="GET",route="/api/v1/applications",status_code="200"',
    ),
    1,
  )
  t.equal(
    sample(
      (await scrape(t, two)).text,
      'platform_http_requests_total',
      'method="GET",route="/api/v1/applications",status_code="200"',
    ),
    undefined,
  )
})

t.test('the control-plane docs show the PromQL the code sends', async (t) => {
  // Markdown tables escape the pipe.
  const readme = readFileSync(new URL('../../docs/control-plane.md', import.meta.url), 'utf8').replaceAll('\\|', '|')
  const app = { namespace: '$ns', appName: '$app' }
  const queries = {
    ...applicationQueries(app, 60_000),
    ...functionQueries(app, '$route', 60_000),
    ...overviewQueries(60_000),
  }
  t.equal(Object.keys(queries).length, 7)
  for (const [series, query] of Object.entries(queries)) {
    t.ok(
      readme.includes(`| \`${series}\` |`) && readme.includes(`\`${query.replaceAll('[60s]', '[$w]')}\``),
      `${series}: ${query}`,
    )
  }
})
