// Invoke's path is the caller's, and it ends up behind a prefix: `services/{app}/proxy` on the
// API server, or the Service's own URL in the cluster. Whatever the caller writes (dot
// segments, encoded separators, backslashes, fragments), the request that goes out stays
// under that prefix, and the route check reads the path the function will see. Also the
// method and header values Node's client cannot send, and the 413s of invoke. On the real API
// server (test/helpers/kube-apiserver.ts): what it receives is read from the HTTPS proxy in
// front of it (test/helpers/kube-watch-proxy.ts), and its own service proxy reaches the test's
// function server at the pod's IP (test/fixtures/kube-real-endpoints.ts).
import { createServer } from 'node:http'
import type { IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'
import fc from 'fast-check'
import type { Test } from 'tap'
import t from 'tap'
import { parseInvokePath, routeTakes } from '@session-relay/control/domain/invoke-path'
import { servePods, untilEndpoints } from '../fixtures/kube-real-endpoints.js'
import type { App, TestControl } from '../helpers/control.js'
import { firstFunction } from '../helpers/control.js'
import type { RealClusterControl } from '../helpers/cluster.js'
import { deployRealApp, startRealClusterControl } from '../helpers/cluster.js'
import type { WatchProxy } from '../helpers/kube-watch-proxy.js'

const proxyOf = (namespace: string): string => `/api/v1/namespaces/${namespace}/services/hello/proxy`

type Seen = { method: string; url: string; headers: IncomingHttpHeaders }
type Result = { status: number; body: string }

/** The application's pods: answer 200 with nothing, and remember each request as it came. */
async function startFunction(t: Test): Promise<{ url: string; seen: Seen[] }> {
  const seen: Seen[] = []
  const server = createServer((request, response) => {
    seen.push({ method: request.method ?? '', url: request.url ?? '', headers: request.headers })
    request.resume()
    request.on('end', () => response.end())
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  )
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen }
}

type Setup = RealClusterControl & {
  app: App
  all: string
  api: string
  fn: { url: string; seen: Seen[] }
  /** What the API server received. */
  received: WatchProxy['received']
  /** The Service's proxy path on the API server. */
  proxyPath: string
}

/** One deployed application "hello" with two functions: route `/...` and route `/api/...`. */
async function setup(t: Test): Promise<Setup> {
  const cluster = await startRealClusterControl(t, 'pglite', { watchProxy: true })
  const app = await deployRealApp(cluster)
  const fn = await startFunction(t)
  await servePods(cluster.kube, 'hello', fn.url)
  await untilEndpoints(cluster.kube, 'hello', 1)
  const api = (
    await cluster.control.call('POST', `/applications/${app.id}/functions`, {
      json: { name: 'api', route: '/api/...' },
    })
  ).body as { id: string }
  const invokeOf = (fnId: string): string => `/applications/${app.id}/functions/${fnId}/invoke`
  return {
    ...cluster,
    app,
    all: invokeOf(firstFunction(app).id),
    api: invokeOf(api.id),
    fn,
    received: cluster.watches!.received,
    proxyPath: proxyOf(cluster.kube.namespace),
  }
}

// Heavy in what moves a path: dots, separators raw and encoded in both cases, and the
// characters that end a path or start an authority; with plain path text in between, so a
// good share of the paths pass and are checked on the wire.
const HOSTILE = fc.constantFrom(
  '.',
  '..',
  '/',
  '//',
  '\\',
  '%2e',
  '%2E',
  '%2f',
  '%2F',
  '%5c',
  '%5C',
  '%25',
  '%',
  '?',
  '#',
  '\u0000',
  '\u0001',
  'http:',
  '@',
  ':',
)
const PLAIN = fc.constantFrom(
  '/',
  '/',
  '.',
  'a',
  'api',
  'b',
  '.a',
  '%41',
  '%3a',
  '%40',
  '%21',
  '!',
  "'",
  '(',
  '*',
  '$',
  '+',
  ' ',
  ';',
  '=',
  '&',
  '~',
  'é',
  '\u{1F600}',
  'secrets',
)
const TOKEN = fc.oneof({ arbitrary: PLAIN, weight: 3 }, { arbitrary: HOSTILE, weight: 2 })
const PATHS = fc
  .tuple(fc.constantFrom('/', '/', '/api/', '/api', ''), fc.array(TOKEN, { maxLength: 10 }))
  .map(([start, tokens]) => start + tokens.join(''))

/** Where a URL parser takes `target` (an origin-form request target). */
function resolved(target: string): string {
  return new URL(target, 'http://resolver.invalid').pathname
}

/** The route /api/... takes this path: `/api`, `/api/` or below. */
function underApi(path: string): boolean {
  return path === '/api' || path.startsWith('/api/')
}

t.test('invoke paths: every request the API server receives lies under the Service proxy (property)', async (t) => {
  const s = await setup(t)
  const PROXY = s.proxyPath
  let probe = 0
  await fc.assert(
    fc.asyncProperty(PATHS, fc.boolean(), async (path, viaApi) => {
      const id = String(++probe)
      const reply = await s.control.call('POST', viaApi ? s.api : s.all, {
        json: { method: 'GET', path, headers: { 'x-probe': [id] } },
      })
      const mine = s.received.filter((r) => r.headers['x-probe'] === id)
      if (reply.status === 400) {
        if (mine.length !== 0) throw new Error(`400, yet the API server got ${mine.map((r) => r.url).join(', ')}`)
        return
      }
      if (reply.status !== 200) throw new Error(`answered ${reply.status}: ${reply.text}`)
      if (mine.length !== 1) throw new Error(`${mine.length} requests reached the API server`)
      const wire = (mine[0] as Seen).url
      if (!wire.startsWith(PROXY + '/')) throw new Error(`sent ${wire}`)
      if (!resolved(wire).startsWith(PROXY + '/')) throw new Error(`sent ${wire}, which resolves to ${resolved(wire)}`)
      if (resolved(wire) !== wire.split('?')[0]) throw new Error(`sent ${wire}, which a URL parser changes`)
      if (viaApi && !underApi(resolved(wire).slice(PROXY.length))) throw new Error(`route /api/... sent ${wire}`)
      if ((reply.body as Result).status !== 200) throw new Error(`the function did not answer: ${reply.text}`)
      // The proxy decodes the path and escapes it again its own way: sent in that form, what
      // the route check read is what the function gets.
      const arrived = s.fn.seen.filter((r) => r.headers['x-probe'] === id).map((r) => r.url)
      if (arrived.join() !== wire.slice(PROXY.length))
        throw new Error(`sent ${wire}, the function got ${arrived.join(', ')}`)
    }),
    { seed: 42, numRuns: 200 },
  )
  t.pass('200 generated paths: 400, or one request under the proxy')
  t.ok(s.fn.seen.length > 20, `precondition: many generated paths were valid (${s.fn.seen.length})`)
})

t.test('invoke paths: traversal, encoded separators, fragments and authorities: 400 with the reason', async (t) => {
  const s = await setup(t)
  const PROXY = s.proxyPath
  const refusals: Array<[string, string, string]> = [
    ['/../../secrets', s.all, 'path: holds a "." or ".." segment (also when percent-encoded)'],
    ['/a/%2e%2E/%2E%2e/secrets', s.all, 'path: holds a "." or ".." segment (also when percent-encoded)'],
    ['/a/.%2e/b', s.all, 'path: holds a "." or ".." segment (also when percent-encoded)'],
    ['/./x', s.all, 'path: holds a "." or ".." segment (also when percent-encoded)'],
    ['/a/..%2f..%2fsecrets', s.all, 'path: holds an encoded separator ("%2f")'],
    ['/a%2F..', s.all, 'path: holds an encoded separator ("%2F")'],
    ['/a/%5c..%5Csecrets', s.all, 'path: holds an encoded separator ("%5c")'],
    ['/a\\..\\secrets', s.all, 'path: holds a backslash, which URL parsers read as "/"'],
    ['//evil.example/x', s.all, 'path: holds an empty segment ("//")'],
    ['/a//b', s.all, 'path: holds an empty segment ("//")'],
    ['/a#/../../secrets', s.all, 'path: holds a fragment ("#"), which no server receives'],
    ['/a\u0000b', s.all, 'path: holds a control character or NUL'],
    ['/a\r\nHost: evil', s.all, 'path: holds a control character or NUL'],
    ['/a/%zz', s.all, 'path: holds a "%" that starts no percent-escape'],
    ['/a?q=%z', s.all, 'path: holds a "%" that starts no percent-escape'],
    ['/api/../admin', s.api, 'path: holds a "." or ".." segment (also when percent-encoded)'],
    ['/api/%2e%2e/admin', s.api, 'path: holds a "." or ".." segment (also when percent-encoded)'],
    ['/apix', s.api, "path /apix is not one this function's route /api/... takes"],
    ['/%61pix/..', s.api, 'path: holds a "." or ".." segment (also when percent-encoded)'],
  ]
  for (const [path, invokePath, error] of refusals) {
    const reply = await s.control.call('POST', invokePath, { json: { method: 'GET', path } })
    t.equal(reply.status, 400, JSON.stringify(path))
    t.same(reply.body, { error }, `${JSON.stringify(path)}: the reason`)
  }
  const absolute = await s.control.call('POST', s.all, {
    json: { method: 'GET', path: 'http://kubernetes.default/api/v1/namespaces/apps/secrets' },
  })
  t.equal(absolute.status, 400, 'an absolute URL')
  t.same(absolute.body, { error: 'path: expected path and query, starting with "/"' })
  t.same(s.fn.seen, [], 'nothing reached the function')
  t.same(
    s.received.filter((r) => r.url.includes('/proxy')),
    [],
    'nor the service proxy',
  )

  // What passes is sent in normal form, the form the API server's proxy forwards a path in (it
  // decodes it and escapes it again as Go does): every escape decoded, then what a Go path
  // escapes escaped, in upper case. The route check reads that same form, and the function
  // gets it unchanged.
  const accepted: Array<[string, string, string]> = [
    ['/%61pi/x%2dy/%7e', s.api, '/api/x-y/~'],
    ['/api/a b/é?q=a b&r=%2f&s=/?', s.api, '/api/a%20b/%C3%A9?q=a%20b&r=%2f&s=/?'],
    ['/api/', s.api, '/api/'],
    ['/a/...?', s.all, '/a/...'],
    ['/a%3ab/%c3%a9', s.all, '/a:b/%C3%A9'],
    ["/x!'(y)*/%24%2B,;=@", s.all, '/x%21%27%28y%29%2A/$+,;=@'],
  ]
  for (const [path, invokePath, sent] of accepted) {
    const reply = await s.control.call('POST', invokePath, { json: { method: 'GET', path } })
    t.equal(reply.status, 200, JSON.stringify(path))
    // The last of the proxy's: a watch of the control plane's own may reach the API server after it.
    const proxied = s.received.filter((r) => r.url.startsWith(`${PROXY}/`)).at(-1)
    t.equal(proxied?.url, PROXY + sent, `${JSON.stringify(path)}: the API server gets ${sent}`)
    t.equal(s.fn.seen.at(-1)?.url, sent, 'and the function the same')
  }
})

t.test('invoke paths in the cluster: straight to the Service, its host fixed, the path validated', async (t) => {
  const s = await setup(t)
  const kube = s.control.server.cluster!.kube
  kube.inCluster = true
  kube.serviceUrl = (name) => (name === 'hello' ? s.fn.url : 'http://127.0.0.1:1')
  const host = new URL(s.fn.url).host

  const ok = await s.control.call('POST', s.api, {
    json: { method: 'GET', path: '/%61pi/a b?x=1', headers: { host: ['evil.example'] } },
  })
  t.equal(ok.status, 200)
  t.match(s.fn.seen.at(-1), { url: '/api/a%20b?x=1', headers: { host } }, "the checked path, on the Service's host")
  const refused = await s.control.call('POST', s.api, { json: { method: 'GET', path: '/api/../admin' } })
  t.equal(refused.status, 400, 'the route is not bypassed by a dot segment')
  t.same(refused.body, { error: 'path: holds a "." or ".." segment (also when percent-encoded)' })
  const seenBefore = s.fn.seen.length
  for (const path of ['/../x', '/a/%2E%2E/x', '//evil.example/x', '/a\\..\\x', '/a/..%2Fx']) {
    t.equal((await s.control.call('POST', s.all, { json: { method: 'GET', path } })).status, 400, JSON.stringify(path))
  }
  t.equal(s.fn.seen.length, seenBefore, 'none of them reached the Service')

  let probe = 0
  await fc.assert(
    fc.asyncProperty(PATHS, fc.boolean(), async (path, viaApi) => {
      const id = String(++probe)
      const reply = await s.control.call('POST', viaApi ? s.api : s.all, {
        json: { method: 'GET', path, headers: { 'x-probe': [id] } },
      })
      const mine = s.fn.seen.filter((r) => r.headers['x-probe'] === id)
      if (reply.status === 400 && mine.length === 0) return
      if (reply.status !== 200 || mine.length !== 1)
        throw new Error(`answered ${reply.status}, the Service got ${mine.length} requests`)
      const { url, headers } = mine[0] as Seen
      if (resolved(url) !== url.split('?')[0]) throw new Error(`sent ${url}, which a URL parser changes`)
      if (headers.host !== host) throw new Error(`sent to host ${headers.host}`)
      if (viaApi && !underApi(resolved(url))) throw new Error(`route /api/... sent ${url}`)
    }),
    { seed: 7, numRuns: 100 },
  )
  t.pass('100 generated paths: 400, or one request to the Service, unchanged by a URL parser')
  kube.inCluster = false
})

t.test('kube.request refuses a path a URL parser would move or that leaves its prefix, whoever built it', async (t) => {
  const { control, watches, kube: cluster } = await startRealClusterControl(t, 'pglite', { watchProxy: true })
  const received = watches!.received
  const PROXY = proxyOf(cluster.namespace)
  const kube = control.server.cluster!.kube
  const before = received.length
  const within = PROXY + '/'
  for (const path of [
    `${PROXY}/../../secrets`,
    `${PROXY}/a/%2e%2E/x`,
    `${PROXY}/a\\..\\..\\x`,
    `${PROXY}/a/./b`,
    `//evil.example${PROXY}/`,
    `${PROXY}/a#x`,
    PROXY,
    '/api/v1/namespaces/apps/secrets',
  ]) {
    await t.rejects(
      kube.request('GET', path, { within }),
      { status: 400, message: 'path: refused, it would not reach the function unchanged' },
      JSON.stringify(path),
    )
  }
  t.equal(received.slice(before).filter((r) => r.url.includes('/proxy')).length, 0, 'nothing was sent')
  const answer = await kube.request('GET', `${PROXY}/a%2Fb?x=..`, { within })
  answer.resume()
  t.equal(
    received.filter((r) => r.url.startsWith(`${PROXY}/`)).at(-1)?.url,
    `${PROXY}/a%2Fb?x=..`,
    'a path no parser changes goes out as it is',
  )
})

t.test(
  'routeTakes reads the route in the normal form of the path; a stored route with an encoded dot segment takes nothing',
  async (t) => {
    const takes = (route: string, path: string): boolean => routeTakes(route, parseInvokePath(path))
    t.ok(takes('/%61pi/...', '/api/x'), 'escapes of unreserved characters are the characters')
    t.ok(takes('/a%3a/b', '/a:/b'), 'escapes are the characters')
    t.ok(takes('/a!/...', '/a%21/b'), 'and what a Go path escapes is escaped in both')
    t.ok(takes('/api/...', '/api'), '/api/... takes /api')
    t.ok(takes('/api/...', '/api/'), 'and /api/')
    t.notOk(takes('/api/...', '/apix'), 'not /apix')
    t.notOk(takes('/api', '/api/'), 'an exact route only itself')
    t.ok(takes('/', '/?q=1'), 'the query is not part of it')
    // Routes written before encoded dot segments were refused may still be stored.
    t.notOk(takes('/a/%2e%2e/...', '/a/x'), 'a route with an encoded ".." takes nothing')
    t.notOk(takes('/a%2f/...', '/a/x'), 'nor one with an encoded "/"')
  },
)

async function invokeReply(
  control: TestControl,
  path: string,
  json: unknown,
): Promise<{ status: number; body: unknown }> {
  const reply = await control.call('POST', path, { json })
  return { status: reply.status, body: reply.body }
}

t.test('invoke: a method or header value the function cannot be sent is 400, before anything is sent', async (t) => {
  const s = await setup(t)
  const proxied = (): number => s.received.filter((r) => r.url.includes('/proxy')).length
  const before = proxied()
  for (const [what, json, error] of [
    ['CONNECT', { method: 'CONNECT', path: '/' }, 'method: CONNECT asks for a tunnel, not an answer; it is not sent'],
    [
      'connect in lower case',
      { method: 'connect', path: '/' },
      'method: CONNECT asks for a tunnel, not an answer; it is not sent',
    ],
    [
      'TRACE',
      { method: 'TRACE', path: '/' },
      'method: TRACE would echo back what the API server adds to the request; it is not sent',
    ],
    [
      'a control character in a value',
      { method: 'GET', path: '/', headers: { 'x-a': ['a\u0001b'] } },
      'headers.x-a: a value holds a character outside visible ASCII, space and tab',
    ],
    [
      'a non-Latin-1 character',
      { method: 'GET', path: '/', headers: { 'x-a': ['\u0100'] } },
      'headers.x-a: a value holds a character outside visible ASCII, space and tab',
    ],
    [
      'a Latin-1 character',
      { method: 'GET', path: '/', headers: { 'x-a': ['café'] } },
      'headers.x-a: a value holds a character outside visible ASCII, space and tab',
    ],
    [
      'DEL',
      { method: 'GET', path: '/', headers: { 'x-a': ['\u007f'] } },
      'headers.x-a: a value holds a character outside visible ASCII, space and tab',
    ],
    [
      'a line break',
      { method: 'GET', path: '/', headers: { 'x-a': ['a\r\nx-b: c'] } },
      'headers.x-a: a value holds a character outside visible ASCII, space and tab',
    ],
    ['a bad name', { method: 'GET', path: '/', headers: { 'x a': ['1'] } }, 'headers: "x a" is not a header name'],
    [
      'OPTIONS, which the API server authorizes as no verb',
      { method: 'OPTIONS', path: '/' },
      "method: OPTIONS cannot go through the API server's service proxy (only GET, HEAD, POST, PUT, PATCH and DELETE); it is not sent",
    ],
    [
      'an extension method',
      { method: 'propfind', path: '/' },
      "method: PROPFIND cannot go through the API server's service proxy (only GET, HEAD, POST, PUT, PATCH and DELETE); it is not sent",
    ],
    [
      'a non-ASCII name',
      { method: 'GET', path: '/', headers: { 'x-é': ['1'] } },
      'headers: "x-é" is not a header name',
    ],
  ] as const) {
    t.same(await invokeReply(s.control, s.all, json), { status: 400, body: { error } }, what)
  }
  t.equal(proxied(), before, 'none of them was sent')
  const fine = await invokeReply(s.control, s.all, {
    method: 'patch',
    path: '/',
    headers: { 'x-a': ['visible ASCII, space\tand tab ~'], 'X-A': ['merged'] },
  })
  t.equal(fine.status, 200, 'the methods the proxy carries, in any case, and such values pass')
  t.equal(s.fn.seen.at(-1)?.method, 'PATCH')
  t.equal(
    s.fn.seen.at(-1)?.headers['x-a'],
    'visible ASCII, space\tand tab ~, merged',
    'names differing in case are one header',
  )
})

t.test('invoke: 413 names the limit that tripped, with its size', async (t) => {
  const s = await setup(t)
  const oneMiB = 1024 * 1024
  const decoded = await invokeReply(s.control, s.all, {
    method: 'POST',
    path: '/',
    body: Buffer.alloc(oneMiB + 1).toString('base64'),
    bodyIsBase64: true,
  })
  t.same(
    decoded,
    { status: 413, body: { error: 'invoke body too large: 1048577 bytes (after base64 decoding), at most 1048576' } },
    'the decoded body',
  )
  const text = await invokeReply(s.control, s.all, { method: 'POST', path: '/', body: 'x'.repeat(oneMiB + 1) })
  t.same(
    text,
    { status: 413, body: { error: 'invoke body too large: 1048577 bytes (UTF-8), at most 1048576' } },
    'a text body, in its UTF-8 bytes',
  )
  // The envelope is JSON with room for the body in base64 (4/3 of it): the route's own, larger limit.
  const envelope = await invokeReply(s.control, s.all, { method: 'POST', path: '/', body: 'x'.repeat(2 * oneMiB) })
  t.same(
    envelope,
    { status: 413, body: { error: 'request body too large: at most 1660246 bytes' } },
    'the JSON envelope',
  )
  const other = await s.control.call('POST', '/applications', { json: { name: 'x'.repeat(oneMiB + 1) } })
  t.same(
    { status: other.status, body: other.body },
    { status: 413, body: { error: 'request body too large: at most 1048576 bytes' } },
    'other routes name their own limit',
  )
})
