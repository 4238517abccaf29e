// The Prometheus client's side of failures a real Prometheus does not produce on demand: no
// answer in time, a proxy's error page, answers of the wrong shape; and what it sends: one
// query_range per series, over a window aligned to the step, with credentials from the URL.
// A plain HTTP server stands where Prometheus would be. prometheus.test.ts runs the
// queries on a real Prometheus.
import { createServer } from 'node:http'
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import type { Test } from 'tap'
import { MAX_ANSWER_BYTES } from '@session-relay/control/metrics/prometheus'
import { freePort } from '../helpers/ports.js'
import { createApp, firstFunction, startTestControl } from '../helpers/control.js'

type MetricsBody = {
  range: string
  step: string
  series: Record<string, { points: Array<[number, number]>; unit: string }>
}

/** An HTTP server standing where Prometheus should be; every request is kept. */
async function standIn(
  t: Test,
  handler: (body: URLSearchParams, request: IncomingMessage, response: ServerResponse) => void,
) {
  const requests: Array<{ method: string; url: string; authorization: string | undefined; body: URLSearchParams }> = []
  const server = createServer((request, response) => {
    let text = ''
    request
      .setEncoding('utf8')
      .on('data', (chunk: string) => {
        text += chunk
      })
      .on('end', () => {
        const body = new URLSearchParams(text)
        requests.push({
          method: request.method ?? '',
          url: request.url ?? '',
          authorization: request.headers.authorization,
          body,
        })
        handler(body, request, response)
      })
  })
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  )
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { port: (server.address() as AddressInfo).port, requests }
}

t.test('one query_range per series, credentials from the URL as Basic auth, never repeated', async (t) => {
  const empty = JSON.stringify({ status: 'success', data: { resultType: 'matrix', result: [] } })
  const prometheus = await standIn(t, (_body, request, response) => {
    const ok = request.headers.authorization === `Basic ${Buffer.from('reader:s3cret pass').toString('base64')}`
    response
      .writeHead(ok ? 200 : 401, { 'content-type': 'application/json' })
      .end(ok ? empty : '{"status":"error","errorType":"auth","error":"unauthorized"}')
  })
  const control = await startTestControl(t, 'pglite', [
    '--dev-insecure-skip-auth',
    '--prometheus-url',
    `http://reader:s3cret%20pass@127.0.0.1:${prometheus.port}/base`,
  ])
  const app = await createApp(control)
  const fn = firstFunction(app)
  for (const [path, count] of [
    [`/applications/${app.id}/metrics?range=1h&step=30s`, 2],
    [`/applications/${app.id}/functions/${fn.id}/metrics`, 3],
    ['/overview/metrics', 2],
  ] as const) {
    prometheus.requests.length = 0
    const reply = await control.call('GET', path)
    t.equal(reply.status, 200, path)
    t.equal(prometheus.requests.length, count, `${path}: one query_range per series`)
    for (const request of prometheus.requests) {
      t.match(request, { method: 'POST', url: '/base/api/v1/query_range' })
      const start = Number(request.body.get('start'))
      const end = Number(request.body.get('end'))
      const step = Number(request.body.get('step'))
      t.equal(request.body.get('timeout'), '10000ms', 'Prometheus gets the same timeout')
      t.equal(end - start, path.includes('range=1h') ? 3600 : 900)
      t.equal(step, path.includes('step=30s') ? 30 : 15)
      t.equal(end % step, 0, 'the window ends on a whole step')
    }
  }
  const queries = new Set(prometheus.requests.map((r) => r.body.get('query')))
  t.equal(queries.size, 2, 'a different query per series')

  // Unreachable with the same credentials: the reason shows neither the URL nor the password.
  const port = await freePort()
  const gone = await startTestControl(t, 'pglite', [
    '--dev-insecure-skip-auth',
    '--prometheus-url',
    `http://reader:s3cret@127.0.0.1:${port}`,
  ])
  const goneApp = await createApp(gone)
  const reply = await gone.call('GET', `/applications/${goneApp.id}/metrics`)
  t.equal(reply.status, 503)
  t.same(reply.body, { error: 'metrics unavailable: Prometheus unreachable (ECONNREFUSED)' })
  t.notMatch(gone.logText(), 's3cret', 'the password is never logged')
})

t.test('a Prometheus that does not answer in time, or answers something else: 503 with the reason', async (t) => {
  let answer: ((response: ServerResponse) => void) | null = null
  const prometheus = await standIn(t, (_body, _request, response) => {
    answer?.(response)
  })
  const control = await startTestControl(t, 'pglite', [
    '--dev-insecure-skip-auth',
    '--prometheus-url',
    `http://127.0.0.1:${prometheus.port}`,
    '--prometheus-timeout',
    '300.5ms',
  ])

  const slow = await control.call('GET', '/overview/metrics') // nobody answers
  t.equal(slow.status, 503)
  t.same(slow.body, { error: 'metrics unavailable: Prometheus did not answer within 300.5ms' })
  t.same(
    prometheus.requests.map((r) => r.body.get('timeout')),
    ['301ms', '301ms'],
    'Prometheus gets whole milliseconds, rounded up',
  )

  for (const [status, contentType, text, reason] of [
    [502, 'text/html', '<html><body>Bad Gateway</body></html>', 'metrics unavailable: Prometheus answered 502'],
    [200, 'text/html', '<html>login</html>', 'metrics unavailable: Prometheus answered something other than JSON'],
    [
      200,
      'application/json',
      '{"status":"success","data":{"resultType":"vector","result":[]}}',
      'metrics unavailable: Prometheus answered something other than a range result',
    ],
    [
      200,
      'application/json',
      JSON.stringify({
        status: 'success',
        data: {
          resultType: 'matrix',
          result: [
            { metric: { a: '1' }, values: [] },
            { metric: { a: '2' }, values: [] },
          ],
        },
      }),
      'metrics unavailable: the query yielded 2 series instead of one',
    ],
    [
      400,
      'application/json',
      JSON.stringify({ status: 'error', errorType: 'bad_data', error: 'x'.repeat(1000) }),
      `metrics unavailable: Prometheus answered 400: bad_data: ${'x'.repeat(200)}`,
    ],
  ] as const) {
    answer = (response) => {
      response.writeHead(status, { 'content-type': contentType }).end(text)
    }
    const reply = await control.call('GET', '/overview/metrics')
    t.equal(reply.status, 503, reason)
    t.same(reply.body, { error: reason })
  }

  // Far more than any series: not read into memory, whether the length is declared or not.
  const big = Buffer.alloc(MAX_ANSWER_BYTES + 1, ' ')
  answer = (response) => {
    response.writeHead(200, { 'content-type': 'application/json', 'content-length': String(big.length) }).end(big)
  }
  t.same(
    (await control.call('GET', '/overview/metrics')).body,
    { error: 'metrics unavailable: Prometheus answered more than 4 MiB' },
    'declared length',
  )
  answer = (response) => {
    response.writeHead(200, { 'content-type': 'application/json' })
    const chunk = Buffer.alloc(64 * 1024, ' ')
    const write = (left: number): void => {
      if (left <= 0 || response.destroyed) return void response.end()
      response.write(chunk, () => write(left - chunk.length))
    }
    write(MAX_ANSWER_BYTES + chunk.length)
  }
  t.same(
    (await control.call('GET', '/overview/metrics')).body,
    { error: 'metrics unavailable: Prometheus answered more than 4 MiB' },
    'chunked',
  )

  answer = (response) => {
    response.writeHead(200, { 'content-type': 'application/json' }).end(
      JSON.stringify({
        status: 'success',
        data: {
          resultType: 'matrix',
          result: [
            {
              metric: {},
              values: [
                [100, '1.5'],
                [115, 'NaN'],
                [130, '+Inf'],
                [145, '-Inf'],
                [160, '2'],
              ],
            },
          ],
        },
      }),
    )
  }
  const reply = await control.call('GET', '/overview/metrics')
  t.equal(reply.status, 200)
  t.same(
    (reply.body as MetricsBody).series.buildRate?.points,
    [
      [100, 1.5],
      [160, 2],
    ],
    'NaN and infinities have no JSON form: gaps',
  )
})
