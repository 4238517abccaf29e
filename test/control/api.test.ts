// The API as a whole: the OpenAPI document against the routes really registered, builds read
// from the database, the endpoints that wait for a cluster or Prometheus (503, after their
// request checks), internal errors that show nothing but are logged with the request id,
// unknown routes, /healthz.
import t from 'tap'
import { parseDuration } from '@session-relay/common/config/duration'
import { createBuild } from '@session-relay/control/store/builds'
import { freePort } from '../helpers/ports.js'
import { createApp, eachEngine, firstFunction, isErrorBody, startTestControl } from '../helpers/control.js'
import type { App } from '../helpers/control.js'

const UNKNOWN_ID = '00000000-0000-4000-8000-000000000000'

type OpenApi = {
  openapi: string
  paths: Record<
    string,
    Record<
      string,
      {
        responses: Record<string, unknown>
        requestBody?: { content: Record<string, unknown> }
        parameters?: Array<{ in: string; name: string }>
        security?: unknown[]
      }
    >
  >
  components: { securitySchemes: Record<string, unknown> }
  security: unknown[]
}

/** "GET /api/v1/applications/{appId}" for every route Fastify has, HEAD left out (Fastify adds it to every GET). */
function registeredRoutes(tree: string): Set<string> {
  const routes = new Set<string>()
  const prefixes: string[] = []
  for (const line of tree.split('\n')) {
    const match = /^(.*?)[├└]── (\S+)(?: \(([^)]*)\))?$/.exec(line)
    if (match === null) continue
    const depth = (match[1] as string).length / 4
    prefixes.length = depth
    const path = (prefixes[depth - 1] ?? '') + (match[2] as string)
    prefixes[depth] = path
    for (const method of (match[3] ?? '').split(', ').filter((m) => m !== '' && m !== 'HEAD')) {
      routes.add(`${method} ${path.replace(/:(\w+)/g, '{$1}')}`)
    }
  }
  return routes
}

eachEngine(t, 'the OpenAPI document lists every route, with its parameters, bodies and answers', async (t, engine) => {
  const control = await startTestControl(t, engine)
  const reply = await control.call('GET', '/openapi.json')
  t.equal(reply.status, 200)
  t.match(reply.headers.get('content-type'), /^application\/json/)
  const doc = reply.body as OpenApi
  t.equal(doc.openapi, '3.1.0')
  t.same(doc.security, [{ idToken: [] }], 'bearer id tokens, document-wide')
  t.match(doc.components.securitySchemes.idToken, { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' })

  // The web console's files (served at /, hidden from the document) are not API routes.
  const routes = new Set(
    [...registeredRoutes(control.server.app.printRoutes({ commonPrefix: false }))].filter((r) =>
      /^\w+ \/(api\/|healthz$|readyz$|metrics$)/.test(r),
    ),
  )
  t.ok(routes.size >= 24, `precondition: the route tree parsed (${routes.size} routes)`)
  const documented = new Set(
    Object.entries(doc.paths).flatMap(([path, ops]) =>
      Object.keys(ops).map((method) => `${method.toUpperCase()} ${path}`),
    ),
  )
  t.same(
    [...routes].filter((r) => !documented.has(r)),
    [],
    'every registered route is documented',
  )
  t.same(
    [...documented].filter((r) => !routes.has(r)),
    [],
    'every documented route exists',
  )
  for (const expected of [
    'GET /api/v1/applications',
    'POST /api/v1/applications',
    'GET /api/v1/applications/{appId}',
    'DELETE /api/v1/applications/{appId}',
    'POST /api/v1/applications/{appId}/deploy',
    'GET /api/v1/applications/{appId}/functions',
    'POST /api/v1/applications/{appId}/functions',
    'GET /api/v1/applications/{appId}/functions/{fnId}',
    'PUT /api/v1/applications/{appId}/functions/{fnId}',
    'DELETE /api/v1/applications/{appId}/functions/{fnId}',
    'GET /api/v1/applications/{appId}/functions/{fnId}/source',
    'PUT /api/v1/applications/{appId}/functions/{fnId}/source',
    'GET /api/v1/applications/{appId}/functions/{fnId}/source.tar.gz',
    'POST /api/v1/applications/{appId}/functions/{fnId}/source.tar.gz',
    'GET /api/v1/applications/{appId}/builds',
    'GET /api/v1/applications/{appId}/builds/{buildId}',
    'POST /api/v1/applications/{appId}/builds',
    'GET /api/v1/applications/{appId}/builds/{buildId}/logs',
    'POST /api/v1/applications/{appId}/functions/{fnId}/invoke',
    'GET /api/v1/applications/{appId}/logs',
    'GET /api/v1/applications/{appId}/metrics',
    'GET /api/v1/applications/{appId}/functions/{fnId}/metrics',
    'GET /api/v1/overview/metrics',
    'GET /healthz',
    'GET /readyz',
    'GET /metrics',
    'GET /api/v1/openapi.json',
    'GET /api/v1/console-config',
  ])
    t.ok(documented.has(expected), `${expected} (control-plane.md §4)`)

  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      const what = `${method.toUpperCase()} ${path}`
      const success = Object.keys(op.responses).filter((status) => status.startsWith('2'))
      t.equal(success.length, 1, `${what}: one success answer`)
      for (const name of path.match(/\{(\w+)\}/g) ?? []) {
        t.ok(
          op.parameters?.some((p) => p.in === 'path' && `{${p.name}}` === name),
          `${what}: path parameter ${name}`,
        )
      }
      if (
        path === '/healthz' ||
        path === '/readyz' ||
        path === '/metrics' ||
        path === '/api/v1/openapi.json' ||
        path === '/api/v1/console-config'
      ) {
        t.same(op.security, [], `${what}: public`)
      } else {
        t.ok(op.responses['401'] && op.responses['403'] && op.responses['500'], `${what}: documents 401, 403 and 500`)
      }
      if (method === 'post' || method === 'put') {
        const bodyless = /\/(deploy|builds)$/.test(path)
        t.equal(op.requestBody !== undefined, !bodyless, `${what}: ${bodyless ? 'no' : 'a'} request body`)
      }
    }
  }
  const upload = doc.paths['/api/v1/applications/{appId}/functions/{fnId}/source.tar.gz']?.post
  t.same(
    Object.keys(upload?.requestBody?.content ?? {}).sort(),
    ['application/gzip', 'multipart/form-data'],
    'the upload takes both forms',
  )
  const download = doc.paths['/api/v1/applications/{appId}/functions/{fnId}/source.tar.gz']?.get
  t.ok(
    (download?.responses['200'] as { content: Record<string, unknown> }).content['application/gzip'],
    'the download is application/gzip',
  )
  t.match(
    doc.paths['/api/v1/applications']?.post?.requestBody?.content['application/json'],
    {
      schema: {
        required: ['name', 'language'],
        properties: { language: { enum: ['go', 'js', 'ts', 'rust'] }, runtime: { enum: ['wasmkube'] } },
      },
    },
    'request schemas come from the TypeBox schemas',
  )
})

eachEngine(
  t,
  'builds: list (newest first) and get read the database; the application shows them',
  async (t, engine) => {
    const control = await startTestControl(t, engine, ['--dev-insecure-skip-auth', '--runtime', 'cluster'])
    const app = await createApp(control)
    t.same((await control.call('GET', `/applications/${app.id}/builds`)).body, [], 'none yet')
    const db = control.server.db
    const first = await createBuild(db, app.id)
    const second = await createBuild(db, app.id)
    const third = await createBuild(db, app.id)
    if (first === null || second === null || third === null) throw new Error('createBuild found no application')
    // Three inserts can share a clock tick: give them distinct creation times, a second apart.
    for (const [age, build] of [
      [2, first],
      [1, second],
    ] as const) {
      await db.query('UPDATE builds SET created_at = created_at - make_interval(secs => $2) WHERE id = $1', [
        build.id,
        age,
      ])
    }
    t.equal(await createBuild(db, UNKNOWN_ID), null, 'no build for an unknown application')
    await db.query(
      "UPDATE builds SET status = 'succeeded', image_ref = 'registry.local/hello@sha256:abc', finished_at = now() WHERE id = $1",
      [first.id],
    )
    await db.query(
      "UPDATE builds SET status = 'failed', error = 'cargo: compile error', finished_at = now() WHERE id = $1",
      [second.id],
    )

    const list = await control.call('GET', `/applications/${app.id}/builds`)
    t.equal(list.status, 200)
    const builds = list.body as Array<Record<string, unknown>>
    t.same(
      builds.map((b) => b.id),
      [third.id, second.id, first.id],
      'newest first',
    )
    t.same(Object.keys(builds[0]!).sort(), [
      'createdAt',
      'error',
      'finishedAt',
      'id',
      'imageRef',
      'imageSizeBytes',
      'status',
    ])
    t.match(builds[0], { status: 'pending', imageRef: null, finishedAt: null, error: null })
    t.match(builds[1], { status: 'failed', imageRef: null, error: 'cargo: compile error', finishedAt: /Z$/ })
    t.match(builds[2], {
      status: 'succeeded',
      imageRef: 'registry.local/hello@sha256:abc',
      error: null,
      finishedAt: /Z$/,
    })
    t.same((await control.call('GET', `/applications/${app.id}/builds/${first.id}`)).body, builds[2], 'get one')
    const view = (await control.call('GET', `/applications/${app.id}`)).body as App & {
      builds: unknown[]
      deployment: unknown
    }
    t.same(view.builds, builds, 'the application lists its builds')
    t.equal(view.deployment, null, 'no deployment without a cluster')
    const other = await createApp(control, 'other')
    t.equal(
      (await control.call('GET', `/applications/${other.id}/builds/${first.id}`)).status,
      404,
      "a build is not found under another application's id",
    )
  },
)

eachEngine(
  t,
  'cluster endpoints: their checks first (404, 400), then 503 "cluster not configured" naming the settings',
  async (t, engine) => {
    const control = await startTestControl(t, engine, ['--dev-insecure-skip-auth', '--runtime', 'cluster'])
    const app = await createApp(control)
    const fn = firstFunction(app)
    const build = await createBuild(control.server.db, app.id)
    const unavailable = {
      error:
        'cluster not configured: set PLATFORM_KUBECONFIG (or run in a cluster), or PLATFORM_RUNTIME=local to build and run on this machine',
    }
    const invoke = {
      method: 'GET',
      path: '/hello?x=1',
      headers: { accept: ['text/plain'] },
      body: '',
      bodyIsBase64: false,
    }
    const cases: Array<[string, string, unknown?]> = [
      ['POST', `/applications/${app.id}/builds`],
      ['GET', `/applications/${app.id}/builds/${build!.id}/logs`],
      ['GET', `/applications/${app.id}/builds/${build!.id}/logs?follow=true`],
      ['POST', `/applications/${app.id}/deploy`],
      ['POST', `/applications/${app.id}/functions/${fn.id}/invoke`, invoke],
      ['POST', `/applications/${app.id}/functions/${fn.id}/invoke`, { method: 'POST', path: '/' }],
      ['GET', `/applications/${app.id}/logs`],
      ['GET', `/applications/${app.id}/logs?follow=true&tail=200`],
    ]
    for (const [method, path, json] of cases) {
      const reply = await control.call(method, path, json === undefined ? {} : { json })
      t.equal(reply.status, 503, `${method} ${path}`)
      t.same(reply.body, unavailable, `${method} ${path}: says why`)
    }
    const notFound: Array<[string, string, unknown?]> = [
      ['POST', `/applications/${UNKNOWN_ID}/builds`],
      ['GET', `/applications/${app.id}/builds/${UNKNOWN_ID}/logs`],
      ['POST', `/applications/${UNKNOWN_ID}/deploy`],
      ['POST', `/applications/${app.id}/functions/${UNKNOWN_ID}/invoke`, invoke],
      ['GET', `/applications/${UNKNOWN_ID}/logs`],
    ]
    for (const [method, path, json] of notFound) {
      t.equal(
        (await control.call(method, path, json === undefined ? {} : { json })).status,
        404,
        `${method} ${path}: unknown id first`,
      )
    }
    const invalid: Array<[string, string, unknown, RegExp]> = [
      ['GET', `/applications/${app.id}/logs?tail=-1`, undefined, /^query parameter tail must be >= 0/],
      ['GET', `/applications/${app.id}/logs?tail=lots`, undefined, /^query parameter tail: expected an integer/],
      ['GET', `/applications/${app.id}/logs?follow=maybe`, undefined, /^query parameter follow: expected a boolean/],
      ['GET', `/applications/${app.id}/logs?since=1h`, undefined, /^unknown query parameter since/],
      [
        'GET',
        `/applications/${app.id}/builds/${build!.id}/logs?follow=2`,
        undefined,
        /^query parameter follow: expected a boolean/,
      ],
      ['POST', `/applications/${app.id}/functions/${fn.id}/invoke`, { path: '/' }, /^missing property method/],
      ['POST', `/applications/${app.id}/functions/${fn.id}/invoke`, { method: 'GET' }, /^missing property path/],
      [
        'POST',
        `/applications/${app.id}/functions/${fn.id}/invoke`,
        { method: 'GE T', path: '/' },
        /^method: expected an HTTP method token/,
      ],
      [
        'POST',
        `/applications/${app.id}/functions/${fn.id}/invoke`,
        { method: 'GET', path: 'hello' },
        /^path: expected path and query, starting with "\/"/,
      ],
      [
        'POST',
        `/applications/${app.id}/functions/${fn.id}/invoke`,
        { method: 'GET', path: '/', headers: { accept: 'text/plain' } },
        /^headers.accept: expected an array/,
      ],
      [
        'POST',
        `/applications/${app.id}/functions/${fn.id}/invoke`,
        { method: 'GET', path: '/', bodyIsBase64: 'yes' },
        /^bodyIsBase64: expected a boolean/,
      ],
      [
        'POST',
        `/applications/${app.id}/functions/${fn.id}/invoke`,
        { method: 'GET', path: '/', timeout: 5 },
        /^unknown property timeout/,
      ],
    ]
    for (const [method, path, json, reason] of invalid) {
      const reply = await control.call(method, path, json === undefined ? {} : { json })
      t.equal(reply.status, 400, `${method} ${path} ${json === undefined ? '' : JSON.stringify(json)}`)
      t.match((reply.body as { error: string }).error, reason, 'says why')
    }
    const big = await control.call('POST', `/applications/${app.id}/functions/${fn.id}/invoke`, {
      json: { method: 'POST', path: '/', body: 'x'.repeat(1024 * 1024 + 1) },
    })
    t.equal(big.status, 413, 'an invoke body past 1 MiB')
    t.same(big.body, { error: 'invoke body too large: 1048577 bytes (UTF-8), at most 1048576' })
    const limit = await control.call('POST', `/applications/${app.id}/functions/${fn.id}/invoke`, {
      json: { method: 'POST', path: '/', body: 'x'.repeat(1024 * 1024) },
    })
    t.same(limit.body, unavailable, 'a body of exactly 1 MiB passes the checks')
  },
)

eachEngine(
  t,
  'metrics endpoints: range and step checked, then the embedded series without Prometheus, 503 when it is not there',
  async (t, engine) => {
    const plain = await startTestControl(t, engine)
    const closedPort = await freePort() // nothing listens there
    const withUrl = await startTestControl(t, engine, [
      '--dev-insecure-skip-auth',
      '--prometheus-url',
      `http://127.0.0.1:${closedPort}/`,
    ])
    t.equal(withUrl.config.prometheusUrl, `http://127.0.0.1:${closedPort}`, 'the trailing slash is dropped')
    for (const control of [plain, withUrl]) {
      const app = await createApp(control)
      const fn = firstFunction(app)
      const expected = { error: 'metrics unavailable: Prometheus unreachable (ECONNREFUSED)' }
      for (const base of [
        `/applications/${app.id}/metrics`,
        `/applications/${app.id}/functions/${fn.id}/metrics`,
        '/overview/metrics',
      ]) {
        for (const query of [
          '',
          '?range=15m&step=15s',
          '?range=1m',
          '?range=24h&step=10s',
          '?range=6h&step=30s',
          '?range=1h&step=1s',
        ]) {
          const reply = await control.call('GET', base + query)
          if (control === plain) {
            // No Prometheus: the control plane's own series, one point per step, both ends.
            const body = reply.body as { range: string; step: string; series: Record<string, { points: unknown[] }> }
            t.equal(reply.status, 200, `${base}${query}`)
            const [range = '15m', step = '15s'] = [/range=(\w+)/.exec(query)?.[1], /step=(\w+)/.exec(query)?.[1]]
            t.match(body, { range, step })
            const count = Math.floor(parseDuration(range) / parseDuration(step)) + 1
            for (const [name, series] of Object.entries(body.series)) {
              // No request: no p95 (Prometheus's NaN, left out); every other series is 0 throughout.
              t.equal(series.points.length, name === 'latencyP95' ? 0 : count, `${base}${query} ${name}`)
            }
            continue
          }
          t.equal(reply.status, 503, `${base}${query}`)
          t.same(reply.body, expected)
        }
        for (const [query, reason] of [
          ['?range=30s', /^query parameter range: expected a Go duration from 1m0s to 24h0m0s/],
          ['?range=25h', /^query parameter range/],
          ['?range=abc', /^query parameter range/],
          ['?range=-5m', /^query parameter range/],
          ['?step=500ms', /^query parameter step: expected a Go duration of at least 1s/],
          ['?step=0s', /^query parameter step/],
          ['?step=x', /^query parameter step/],
          ['?range=24h&step=1s', /^query parameter step: too small for the range, at most 11000 points per series/],
          ['?window=1h', /^unknown query parameter window/],
        ] as const) {
          const reply = await control.call('GET', base + query)
          t.equal(reply.status, 400, `${base}${query}`)
          t.match((reply.body as { error: string }).error, reason, `${base}${query}: says why`)
        }
      }
      t.equal((await control.call('GET', `/applications/${UNKNOWN_ID}/metrics`)).status, 404, 'unknown application')
      t.equal(
        (await control.call('GET', `/applications/${app.id}/functions/${UNKNOWN_ID}/metrics`)).status,
        404,
        'unknown function',
      )
    }
  },
)

eachEngine(
  t,
  'an internal error answers {"error":"internal error"} and logs the real error with the request id',
  async (t, engine) => {
    const control = await startTestControl(t, engine)
    const app = await createApp(control)
    await control.server.db.query('DROP TABLE builds')
    const broken = await control.call('GET', `/applications/${app.id}/builds`)
    t.equal(broken.status, 500)
    t.equal(broken.text, '{"error":"internal error"}', 'exactly this body: no SQL, no table name, no stack')
    const requestId = broken.headers.get('x-request-id')
    t.match(requestId, /^[0-9a-f-]{36}$/, 'the answer names its request id')
    const line = control.logs.find((l) => l.msg === 'internal error')
    t.ok(line, 'an internal-error log line')
    t.equal(line?.reqId, requestId, 'with the same request id')
    t.equal(line?.level, 50, 'at error level')
    t.match((line?.err as { message?: string })?.message, /relation "builds" does not exist/, 'with the real error')
    t.match((line?.err as { stack?: string })?.stack, /at /, 'and its stack')

    await control.server.db.close()
    const closed = await control.call('GET', '/applications')
    t.equal(closed.status, 500, 'with the database closed')
    t.equal(closed.text, '{"error":"internal error"}')
    const closedLine = control.logs.filter((l) => l.msg === 'internal error').at(-1)
    t.equal(closedLine?.reqId, closed.headers.get('x-request-id'))
    t.ok(isErrorBody(JSON.parse(closed.text)))
  },
)

eachEngine(t, 'unknown routes: 404 {error}; /healthz: 200 ok; every answer carries x-request-id', async (t, engine) => {
  const control = await startTestControl(t, engine)
  for (const [method, path] of [
    ['GET', '/nope'],
    ['GET', '/applications/'],
    ['PATCH', '/applications'],
    ['DELETE', '/applications'],
    ['GET', '/v2/applications'],
  ]) {
    const reply = await control.call(method as string, path as string)
    t.equal(reply.status, 404, `${method} /api/v1${path}`)
    t.ok(isErrorBody(reply.body), `${method} /api/v1${path}: {error}`)
  }
  t.same((await control.call('GET', '/nope')).body, { error: 'no route GET /api/v1/nope' })
  const health = await control.call('GET', '/healthz')
  t.equal(health.status, 200)
  t.equal(health.text, 'ok')
  t.match(health.headers.get('content-type'), /^text\/plain/)
  const ids = new Set<string | null>()
  for (let i = 0; i < 3; i++) ids.add((await control.call('GET', '/healthz')).headers.get('x-request-id'))
  t.equal(ids.size, 3, 'a fresh request id per request')
  t.equal((await fetch(`${control.url}/healthz`, { method: 'HEAD' })).status, 200, 'HEAD /healthz')
})
