// The metrics endpoints against a real Prometheus (Debian's package, started by the test on
// loopback) scraping the exporter fixture and the control plane's own /metrics: every query
// the control plane sends runs on a real PromQL engine, and the numbers that come back are
// checked against the values the fixture serves; and a real Prometheus refusing a query.
// prometheus-client.test.ts has the failures only a stand-in can produce.
import t from 'tap'
import type { Test } from 'tap'
import type { BuildT } from '@session-relay/control/model/resources'
import { startExporter } from '../fixtures/metrics-exporter.js'
import type { FixtureSeries } from '../fixtures/metrics-exporter.js'
import { startPrometheus } from '../fixtures/prometheus.js'
import { freePort } from '../helpers/ports.js'
import { createApp, firstFunction, startTestControl } from '../helpers/control.js'
import type { Fn, TestControl } from '../helpers/control.js'

type Point = [number, number]
type Series = { points: Point[]; unit: string }
type MetricsBody = { range: string; step: string; series: Record<string, Series> }

// Rate windows of 5 s over 1 s scrapes: settled after seconds, not minutes.
const FAST_RATES = ['--metrics-rate-window', '5s']
const RATE_WINDOW_SECONDS = 5

const MiB = 1024 * 1024

// Pods: shop-a and shop-b belong to the application "shop" in the control plane's namespace
// (default); other-a to another application; shop-x to a "shop" in another namespace. Only
// the first two may count. kube-state-metrics reports shop-a twice (two replicas), which a
// join without max by (namespace, pod) would refuse as many-to-many.
const pod = (namespace: string, name: string): Record<string, string> => ({ namespace, pod: name })
const POD_LABELS: FixtureSeries[] = [
  {
    name: 'kube_pod_labels',
    labels: { ...pod('default', 'shop-a'), label_core_spinkube_dev_app_name: 'shop', ksm: 'one' },
    value: 1,
  },
  {
    name: 'kube_pod_labels',
    labels: { ...pod('default', 'shop-a'), label_core_spinkube_dev_app_name: 'shop', ksm: 'two' },
    value: 1,
  },
  {
    name: 'kube_pod_labels',
    labels: { ...pod('default', 'shop-b'), label_core_spinkube_dev_app_name: 'shop', ksm: 'one' },
    value: 1,
  },
  {
    name: 'kube_pod_labels',
    labels: { ...pod('default', 'other-a'), label_core_spinkube_dev_app_name: 'other', ksm: 'one' },
    value: 1,
  },
  {
    name: 'kube_pod_labels',
    labels: { ...pod('staging', 'shop-x'), label_core_spinkube_dev_app_name: 'shop', ksm: 'one' },
    value: 1,
  },
]

// cAdvisor: each pod's cgroup as a whole (container="") and its pause container ("POD") are
// reported beside the real containers and must not be added to them.
const cadvisor = (
  namespace: string,
  name: string,
  container: string,
  cpuPerSecond: number,
  memory: number,
): FixtureSeries[] => [
  {
    name: 'container_cpu_usage_seconds_total',
    labels: { ...pod(namespace, name), container },
    perSecond: cpuPerSecond,
  },
  { name: 'container_memory_working_set_bytes', labels: { ...pod(namespace, name), container }, value: memory },
]
const CADVISOR: FixtureSeries[] = [
  ...cadvisor('default', 'shop-a', 'app', 0.25, 100 * MiB),
  ...cadvisor('default', 'shop-a', '', 0.26, 120 * MiB),
  ...cadvisor('default', 'shop-a', 'POD', 0.01, 1 * MiB),
  ...cadvisor('default', 'shop-b', 'app', 0.5, 50 * MiB),
  ...cadvisor('default', 'other-a', 'app', 2, 1024 * MiB),
  ...cadvisor('staging', 'shop-x', 'app', 4, 2048 * MiB),
]
const SHOP_CPU_CORES = 0.75
const SHOP_MEMORY_BYTES = 150 * MiB

// OTel span metrics. The route /cart/...: 7 calls/s on shop-a (1 of them errors), 3 on shop-b,
// with durations spread over the buckets so that p95 lies halfway through (10, 25] ms: 17.5.
// The route /... of the same application: 100 calls/s, all under 5 ms (p95 4.75), no errors.
function spans(
  namespace: string,
  name: string,
  route: string,
  calls: Record<string, number>,
  buckets: Record<string, number>,
): FixtureSeries[] {
  const labels = {
    ...pod(namespace, name),
    service_name: 'spin',
    span_name: `GET ${route}`,
    span_kind: 'SPAN_KIND_SERVER',
    http_route: route,
  }
  return [
    ...Object.entries(calls).map(([status, perSecond]) => ({
      name: 'traces_span_metrics_calls_total',
      labels: { ...labels, status_code: status },
      perSecond,
    })),
    ...Object.entries(buckets).map(([le, perSecond]) => ({
      name: 'traces_span_metrics_duration_milliseconds_bucket',
      labels: { ...labels, status_code: 'STATUS_CODE_UNSET', le },
      perSecond,
    })),
  ]
}
const SPANS: FixtureSeries[] = [
  ...spans(
    'default',
    'shop-a',
    '/cart/...',
    { STATUS_CODE_UNSET: 6, STATUS_CODE_ERROR: 1 },
    { 5: 3, 10: 6, 25: 7, '+Inf': 7 },
  ),
  ...spans('default', 'shop-b', '/cart/...', { STATUS_CODE_UNSET: 3 }, { 5: 2, 10: 3, 25: 3, '+Inf': 3 }),
  ...spans('default', 'shop-a', '/...', { STATUS_CODE_UNSET: 100 }, { 5: 100, 10: 100, 25: 100, '+Inf': 100 }),
  // Same route, other application and other namespace: slow and failing, and not ours.
  ...spans('default', 'other-a', '/cart/...', { STATUS_CODE_ERROR: 50 }, { 5: 0, 10: 0, 25: 0, '+Inf': 50 }),
  ...spans('staging', 'shop-x', '/cart/...', { STATUS_CODE_ERROR: 70 }, { 5: 0, 10: 0, 25: 0, '+Inf': 70 }),
]

async function metrics(control: TestControl, path: string): Promise<MetricsBody> {
  const reply = await control.call('GET', path)
  if (reply.status !== 200) throw new Error(`GET ${path} answered ${reply.status}: ${reply.text}`)
  return reply.body as MetricsBody
}

async function createFunction(control: TestControl, appId: string, name: string, route: string): Promise<Fn> {
  const reply = await control.call('POST', `/applications/${appId}/functions`, { json: { name, route } })
  if (reply.status !== 201) throw new Error(`create function answered ${reply.status}: ${reply.text}`)
  return reply.body as Fn
}

/**
 * The points of a rate series whose whole window had every scrape succeed: a gauge (`scraped`)
 * has a point at each of those seconds. On a busy machine a scrape can time out, and Prometheus
 * then marks the target's series stale, which leaves a gap there.
 */
function settled(series: Series, scraped: Series): Point[] {
  const seen = new Set(scraped.points.map(([time]) => time))
  return series.points.filter(([time]) =>
    Array.from({ length: RATE_WINDOW_SECONDS + 2 }, (_, k) => time - k).every((second) => seen.has(second)),
  )
}

function near(t: Test, actual: number, expected: number, relative: number, what: string): void {
  t.ok(
    Math.abs(actual - expected) <= Math.abs(expected) * relative,
    `${what}: ${actual} within ${relative * 100}% of ${expected}`,
  )
}

t.test('without the prometheus binary the tests fail, saying how to install it', async (t) => {
  const path = process.env.PATH
  process.env.PATH = '/nonexistent'
  t.teardown(() => {
    process.env.PATH = path
  })
  await t.rejects(startPrometheus(t, { targets: [] }), {
    message: /^prometheus is not installed: run scripts\/install-prometheus\.sh/,
  })
})

t.test(
  'application and function series: the numbers PromQL computes from cAdvisor, kube-state-metrics and span metrics',
  async (t) => {
    // The control plane first: opening its embedded database keeps this process (and so the
    // exporter in it) busy for a moment, long enough to fail a scrape.
    const port = await freePort()
    const control = await startTestControl(t, 'pglite', [
      '--dev-insecure-skip-auth',
      '--prometheus-url',
      `http://127.0.0.1:${port}`,
      ...FAST_RATES,
    ])
    const shop = await createApp(control, 'shop')
    const cart = await createFunction(control, shop.id, 'cart', '/cart/...')
    const empty = await createApp(control, 'empty')
    const exporter = await startExporter(t, [...POD_LABELS, ...CADVISOR, ...SPANS])
    const prometheus = await startPrometheus(t, { port, targets: [exporter.target] })
    await prometheus.scrapes(RATE_WINDOW_SECONDS + 4)

    // Enough complete windows to judge (more scrapes when a busy machine made some fail).
    let app = await metrics(control, `/applications/${shop.id}/metrics?range=1m&step=1s`)
    for (let i = 0; i < 20 && settled(app.series.cpu as Series, app.series.memory as Series).length < 3; i++) {
      await prometheus.scrapes(1)
      app = await metrics(control, `/applications/${shop.id}/metrics?range=1m&step=1s`)
    }
    t.equal(app.range, '1m')
    t.equal(app.step, '1s')
    t.same(Object.keys(app.series).sort(), ['cpu', 'memory'])
    const { cpu, memory } = app.series as { cpu: Series; memory: Series }
    t.equal(cpu.unit, 'cores')
    t.equal(memory.unit, 'bytes')
    const times = memory.points.map(([time]) => time)
    t.ok(times.length >= RATE_WINDOW_SECONDS + 3, `a point per second since the first scrape (${times.length})`)
    t.ok(
      times.every((time, i) => Number.isInteger(time) && (i === 0 || time > (times[i - 1] as number))),
      'whole seconds, in order',
    )
    const nowSeconds = Date.now() / 1000
    t.ok(
      (times.at(-1) as number) <= nowSeconds && (times.at(-1) as number) > nowSeconds - 3,
      'the last point is the last whole step',
    )
    t.ok(
      memory.points.every(([, value]) => value === SHOP_MEMORY_BYTES),
      'memory: the working set of the app containers of shop-a and shop-b, exactly',
    )
    const cpuSettled = settled(cpu, memory)
    t.ok(cpuSettled.length >= 2, `settled cpu points (${cpuSettled.length})`)
    for (const [time, value] of cpuSettled) near(t, value, SHOP_CPU_CORES, 0.05, `cpu at ${time}`)

    const cartMetrics = await metrics(control, `/applications/${shop.id}/functions/${cart.id}/metrics?range=1m&step=1s`)
    t.same(Object.fromEntries(Object.entries(cartMetrics.series).map(([name, s]) => [name, s.unit])), {
      requestRate: 'req/s',
      latencyP95: 'ms',
      errorRate: 'req/s',
    })
    const cartSeries = cartMetrics.series as Record<'requestRate' | 'latencyP95' | 'errorRate', Series>
    for (const name of ['requestRate', 'latencyP95', 'errorRate'] as const) {
      t.ok(settled(cartSeries[name], memory).length >= 2, `settled ${name} points`)
    }
    for (const [time, value] of settled(cartSeries.requestRate, memory))
      near(t, value, 10, 0.05, `cart requestRate at ${time}`)
    for (const [time, value] of settled(cartSeries.errorRate, memory))
      near(t, value, 1, 0.05, `cart errorRate at ${time}`)
    // Every bucket of one scrape is read at the same instant, so the quantile has no jitter.
    for (const [time, value] of settled(cartSeries.latencyP95, memory))
      near(t, value, 17.5, 0.001, `cart latencyP95 at ${time}`)

    const everything = firstFunction(shop)
    t.equal(everything.route, '/...', 'precondition: the first function serves every path')
    const rest = (
      await metrics(control, `/applications/${shop.id}/functions/${everything.id}/metrics?range=1m&step=1s`)
    ).series as typeof cartSeries
    for (const [time, value] of settled(rest.requestRate, memory))
      near(t, value, 100, 0.05, `/... requestRate at ${time}`)
    for (const [time, value] of settled(rest.latencyP95, memory))
      near(t, value, 4.75, 0.001, `/... latencyP95 at ${time}`)
    const restErrors = settled(rest.errorRate, memory)
    t.ok(
      restErrors.length >= 2 && restErrors.every(([, value]) => value === 0),
      'no error series at all: an error rate of 0, not a gap',
    )

    const none = await metrics(control, `/applications/${empty.id}/metrics?range=1m&step=1s`)
    t.same(
      none.series,
      { cpu: { points: [], unit: 'cores' }, memory: { points: [], unit: 'bytes' } },
      'an application without pods: empty points',
    )
    const noneFn = await metrics(control, `/applications/${empty.id}/functions/${firstFunction(empty).id}/metrics`)
    t.same(noneFn.series, {
      requestRate: { points: [], unit: 'req/s' },
      latencyP95: { points: [], unit: 'ms' },
      errorRate: { points: [], unit: 'req/s' },
    })

    // Points fall on whole multiples of 15 s: the first may still be a few scrapes away.
    let defaults = await metrics(control, `/applications/${shop.id}/metrics`)
    for (let i = 0; i < 20 && (defaults.series.memory as Series).points.length === 0; i++) {
      await prometheus.scrapes(1)
      defaults = await metrics(control, `/applications/${shop.id}/metrics`)
    }
    t.equal(defaults.range, '15m')
    t.equal(defaults.step, '15s')
    const defaultTimes = (defaults.series.memory as Series).points.map(([time]) => time)
    t.ok(
      defaultTimes.length >= 1 && defaultTimes.every((time) => time % 15 === 0),
      `points on whole 15 s steps (${defaultTimes.join(', ')})`,
    )
  },
)

t.test("overview: the control plane's own requests and finished builds, scraped from its /metrics", async (t) => {
  const port = await freePort()
  const control = await startTestControl(t, 'pglite', [
    '--dev-insecure-skip-auth',
    '--prometheus-url',
    `http://127.0.0.1:${port}`,
    ...FAST_RATES,
  ])
  // The series exists before the first scrape: rate() cannot see a series' first value.
  t.equal((await control.call('GET', '/applications')).status, 200)
  const prometheus = await startPrometheus(t, { port, targets: [`127.0.0.1:${control.server.port}`] })
  await prometheus.scrapes(3)

  const requests = 40
  await Promise.all(Array.from({ length: requests }, () => control.call('GET', '/applications')))
  const build = (id: number, status: BuildT['status'], seconds: number): BuildT => ({
    id: `00000000-0000-4000-8000-${String(id).padStart(12, '0')}`,
    status,
    imageRef: null,
    imageSizeBytes: null,
    createdAt: new Date(Date.now() - seconds * 1000).toISOString(),
    finishedAt: status === 'pending' || status === 'running' ? null : new Date().toISOString(),
    error: status === 'failed' ? 'compile error' : null,
  })
  const finished = [
    build(1, 'succeeded', 30),
    build(2, 'succeeded', 40),
    build(3, 'succeeded', 50),
    build(4, 'succeeded', 60),
    build(5, 'failed', 5),
    build(6, 'failed', 7),
  ]
  for (const b of finished) control.server.metrics.recordBuildFinished(b)
  control.server.metrics.recordBuildFinished(build(1, 'succeeded', 30)) // seen again: counted once
  control.server.metrics.recordBuildFinished(build(7, 'pending', 1))
  await prometheus.scrapes(RATE_WINDOW_SECONDS + 3)

  const scraped = await prometheus.query('platform_builds_finished_total')
  t.same(
    Object.fromEntries(scraped.map((r) => [r.metric.result, r.value[1]])),
    { succeeded: '4', failed: '2' },
    'Prometheus scraped the build counters',
  )

  const overview = await metrics(control, '/overview/metrics?range=1m&step=1s')
  t.same(Object.fromEntries(Object.entries(overview.series).map(([name, s]) => [name, s.unit])), {
    httpRequestRate: 'req/s',
    buildRate: 'builds/s',
  })
  // A burst of N at one instant shows as a rate over the windows that contain it: whatever
  // the window, the area under the curve (sum of points times the 1 s step) is about N. The
  // scrapes of /metrics do not count as the platform's traffic.
  const { httpRequestRate, buildRate } = overview.series as Record<'httpRequestRate' | 'buildRate', Series>
  const area = (series: Series): number => series.points.reduce((sum, [, value]) => sum + value, 0)
  t.ok(
    httpRequestRate.points.some(([, value]) => value === 0),
    'no traffic before the burst: 0 req/s',
  )
  t.ok(
    area(httpRequestRate) >= requests * 0.75 && area(httpRequestRate) <= requests * 1.3,
    `HTTP requests: area ${area(httpRequestRate)} about ${requests}`,
  )
  t.ok(
    buildRate.points.some(([, value]) => value === 0),
    'no builds before: 0 builds/s',
  )
  t.ok(
    area(buildRate) >= finished.length * 0.75 && area(buildRate) <= finished.length * 1.3,
    `builds: area ${area(buildRate)} about ${finished.length}`,
  )
})

t.test(
  'Prometheus refusing a query, behind a path prefix: 503 with its reason; what it can answer still works',
  async (t) => {
    const port = await freePort()
    const control = await startTestControl(t, 'pglite', [
      '--dev-insecure-skip-auth',
      '--prometheus-url',
      `http://127.0.0.1:${port}/prom`,
      ...FAST_RATES,
    ])
    const shop = await createApp(control, 'shop')
    const exporter = await startExporter(t, [...POD_LABELS, ...CADVISOR])
    const prometheus = await startPrometheus(t, {
      port,
      targets: [exporter.target],
      routePrefix: '/prom',
      flags: ['--query.max-samples=1'],
    })
    await prometheus.scrapes(2)
    const refused = await control.call('GET', `/applications/${shop.id}/metrics?range=1m&step=1s`)
    t.equal(refused.status, 503)
    t.match(refused.body, {
      error:
        /^metrics unavailable: Prometheus answered 422: execution: query processing would load too many samples into memory/,
    })
    t.ok(
      control.logs.some((line) => line.msg === 'metrics query failed' && line.level === 40),
      'logged as a warning',
    )
    const overview = await control.call('GET', '/overview/metrics')
    t.equal(overview.status, 200, 'no samples to load: answered')
    t.same((overview.body as MetricsBody).series, {
      httpRequestRate: { points: [], unit: 'req/s' },
      buildRate: { points: [], unit: 'builds/s' },
    })
  },
)
