// With authentication off the control plane answers only Host values that name loopback, or
// the --public-base-url's host (control/src/http/loopback-host.ts): a page that rebinds its own
// name to 127.0.0.1 gets 400 and changes nothing. With authentication on no Host is refused.
import { request } from 'node:http'
import fc from 'fast-check'
import t from 'tap'
import { hostAllowed, hostRule } from '@session-relay/control/http/loopback-host'
import { startOidcProvider } from '../fixtures/oidc-provider.js'
import { isErrorBody, startTestControl } from '../helpers/control.js'
import { rawRequest } from '../helpers/raw-http.js'

const ENGINE = 'pglite'

type Answer = { status: number; body: unknown }

/** One request to the control plane at 127.0.0.1:port with this Host header, its JSON answer read. */
function withHost(port: number, host: string, method = 'GET', path = '/api/v1/applications', json?: unknown) {
  return new Promise<Answer>((resolve, reject) => {
    const body = json === undefined ? undefined : JSON.stringify(json)
    const headers: Record<string, string> = { host }
    if (body !== undefined) headers['content-type'] = 'application/json'
    const sent = request({ host: '127.0.0.1', port, method, path, headers }, (response) => {
      let text = ''
      response.setEncoding('utf8').on('data', (chunk: string) => (text += chunk))
      response.on('end', () => {
        const isJson = response.headers['content-type']?.startsWith('application/json') === true
        resolve({ status: response.statusCode ?? 0, body: isJson && text !== '' ? JSON.parse(text) : text })
      })
    })
    sent.on('error', reject)
    sent.end(body)
  })
}

t.test('auth off: loopback names are answered, any other name gets 400 and changes nothing', async (t) => {
  const control = await startTestControl(t, ENGINE, [
    '--dev-insecure-skip-auth',
    '--public-base-url',
    'https://Fn.Example.test',
    '--public-route',
    'none',
  ])
  const port = control.server.port
  for (const host of ['localhost', `localhost:${port}`, '127.0.0.1', `127.0.0.1:${port}`, '[::1]', `[::1]:${port}`])
    t.equal((await withHost(port, host)).status, 200, `Host: ${host}`)
  t.equal((await withHost(port, 'LocalHost:8081')).status, 200, 'names are case-insensitive')
  t.equal((await withHost(port, 'fn.example.test')).status, 200, "the public base URL's host")
  t.equal((await withHost(port, 'FN.EXAMPLE.TEST:443')).status, 200, "the public base URL's host, any case, a port")

  const evil = await withHost(port, 'evil.example')
  t.equal(evil.status, 400)
  t.ok(isErrorBody(evil.body), 'the API error shape')
  t.match((evil.body as { error: string }).error, /evil\.example.*--dev-insecure-skip-auth/)
  // The reproduction: a JSON POST from the rebound page created an application.
  const created = await withHost(port, `evil.example:${port}`, 'POST', '/api/v1/applications', {
    name: 'rebound',
    language: 'js',
  })
  t.equal(created.status, 400, created.status === 400 ? '' : JSON.stringify(created.body))
  t.same((await control.call('GET', '/applications')).body, [], 'no application was created')
  t.equal((await withHost(port, 'evil.example', 'GET', '/healthz')).status, 400, 'every route, the public ones too')
  t.equal((await withHost(port, 'other.fn.example.test')).status, 400, 'not a name under the public host')
})

t.test('auth off with a host-based public base URL: one label in place of "*"', async (t) => {
  const control = await startTestControl(t, ENGINE, [
    '--dev-insecure-skip-auth',
    '--public-base-url',
    'https://*.fn.example.test',
    '--public-route',
    'none',
  ])
  const port = control.server.port
  t.equal((await withHost(port, 'shop.fn.example.test')).status, 200)
  t.equal((await withHost(port, 'fn.example.test')).status, 400)
  t.equal((await withHost(port, 'a.b.fn.example.test')).status, 400)
})

t.test('auth off: a request without Host (HTTP/1.0, no browser) is answered; an empty one is not', async (t) => {
  const control = await startTestControl(t, ENGINE)
  const none = await rawRequest(control.server.port, 'GET /api/v1/applications HTTP/1.0\r\n\r\n')
  t.equal(none.status, 200, none.head)
  const empty = await rawRequest(control.server.port, 'GET /api/v1/applications HTTP/1.0\r\nhost:\r\n\r\n')
  t.equal(empty.status, 400, empty.head)
})

t.test('auth on: no Host is refused (a rebound page has no token: 401)', async (t) => {
  const oidc = await startOidcProvider({})
  t.teardown(() => oidc.close())
  const control = await startTestControl(t, ENGINE, ['--oidc-issuer', oidc.issuer, '--oidc-audience', oidc.clientId])
  const port = control.server.port
  t.equal((await withHost(port, 'evil.example', 'GET', '/healthz')).status, 200)
  t.equal((await withHost(port, 'evil.example')).status, 401)
})

// The oracle, written apart from the implementation: the header, lowercased, is an allowed
// name alone or followed by ":" and a port from 1 to 65535.
const ALLOWED = ['localhost', '127.0.0.1', '[::1]', 'fn.example.test']
function oracle(header: string): boolean {
  const lower = header.toLowerCase()
  return ALLOWED.some((name) => {
    if (!lower.startsWith(name)) return false
    const rest = lower.slice(name.length)
    if (rest === '') return true
    const port = /^:(\d{1,5})$/.exec(rest)?.[1]
    return port !== undefined && Number(port) >= 1 && Number(port) <= 65535
  })
}

const randomCase = (text: string) =>
  fc
    .array(fc.boolean(), { minLength: text.length, maxLength: text.length })
    .map((upper) => [...text].map((c, i) => (upper[i] === true ? c.toUpperCase() : c)).join(''))

const HOSTILE_AFFIXES = ['.evil.example', '@evil', 'x', '.', ':', ':0', ':65536', ':80:80', ' ', '%2e', '/', '#', '\\']
const HOSTILE_PREFIXES = ['user@', 'user:pass@', 'evil.', 'x', '[', ' ', 'http://']

const hosts = fc.oneof(
  // The allowed names in any case, with a port or not.
  fc
    .tuple(fc.constantFrom(...ALLOWED).chain(randomCase), fc.option(fc.integer({ min: 0, max: 70000 })))
    .map(([name, port]) => (port === null ? name : `${name}:${port}`)),
  // The allowed names spoiled before or after.
  fc
    .tuple(
      fc.constantFrom('', ...HOSTILE_PREFIXES),
      fc.constantFrom(...ALLOWED).chain(randomCase),
      fc.constantFrom('', ...HOSTILE_AFFIXES),
    )
    .map(([before, name, after]) => `${before}${name}${after}`),
  // Other loopback spellings (a rebinding page cannot send them either, but they are not the names).
  fc.constantFrom('127.0.0.2', '0.0.0.0', '2130706433', '0x7f.0.0.1', '[::ffff:127.0.0.1]', '[0:0:0:0:0:0:0:1]'),
  fc.domain(),
  fc.string({ unit: fc.constantFrom(...'abc.:[]@1-_%'), maxLength: 20 }),
)

const RULE = hostRule('https://fn.example.test', false)

t.test('property: only the allowed names, with or without a port, pass', async () => {
  fc.assert(
    fc.property(hosts, (header) => hostAllowed(header, RULE) === oracle(header)),
    { numRuns: 5000 },
  )
})

t.test('property, on the real server: 200 exactly for the allowed names', async (t) => {
  const control = await startTestControl(t, ENGINE, [
    '--dev-insecure-skip-auth',
    '--public-base-url',
    'https://fn.example.test',
    '--public-route',
    'none',
  ])
  const port = control.server.port
  // Printable ASCII only: Node's parser refuses control characters itself (400 too).
  const onTheWire = hosts.filter((header) => /^[\x21-\x7e]+$/.test(header))
  await fc.assert(
    fc.asyncProperty(onTheWire, async (header) => {
      const answer = await rawRequest(
        port,
        `GET /api/v1/applications HTTP/1.1\r\nhost: ${header}\r\nconnection: close\r\n\r\n`,
      )
      return oracle(header) ? answer.status === 200 : answer.status === 400
    }),
    { numRuns: 150 },
  )
})

t.test('the rule: --dev-insecure-listen-anywhere adds IP literals, never names', async (t) => {
  const anywhere = hostRule('', true)
  t.ok(hostAllowed('192.0.2.10:8081', anywhere))
  t.ok(hostAllowed('[2001:db8::1]:8081', anywhere))
  t.notOk(hostAllowed('evil.example', anywhere))
  t.notOk(hostAllowed('192.0.2.10.evil.example', anywhere))
  t.notOk(hostAllowed('192.0.2.10', hostRule('', false)))
  t.ok(hostAllowed(undefined, hostRule('', false)), 'no Host at all: no browser')
})
