// Slow and greedy clients on the control plane's HTTP server: headers that never finish,
// bodies trickled below the minimum rate, idle keep-alive connections and more connections
// than the cap all end; a slow but honest upload passes. The timings are shortened by flags
// (the same settings an operator has) so no test waits for the defaults, which one test
// reads back from the real server object instead.
import { connect } from 'node:net'
import type { Socket } from 'node:net'
import t from 'tap'
import type { Test } from 'tap'
import { startTestControl } from '../helpers/control.js'
import { withTimeout } from '../helpers/wait.js'

type Raw = { socket: Socket; received: () => string; closed: Promise<void>; connected: Promise<void> }

/** A raw TCP connection: what the server sends, and when it closes. */
function open(t: Test, port: number): Raw {
  const socket = connect(port, '127.0.0.1')
  let data = ''
  socket.setEncoding('utf8').on('data', (chunk: string) => {
    data += chunk
  })
  socket.on('error', () => {}) // a reset is one way of being closed
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()))
  const connected = new Promise<void>((resolve) => socket.once('connect', () => resolve()))
  t.teardown(() => {
    socket.destroy()
  })
  return { socket, received: () => data, closed, connected }
}

/**
 * Writes `chunks` one per `everyMs` until they run out or the socket closes; `left()` says how
 * many were still unsent, so a test tells the server's cut from the client's own end by count.
 */
function trickle(raw: Raw, chunks: string[], everyMs: number): { left: () => number } {
  const timer = setInterval(() => {
    const chunk = chunks.shift()
    if (chunk === undefined || raw.socket.destroyed) return clearInterval(timer)
    raw.socket.write(chunk)
  }, everyMs)
  raw.socket.once('close', () => clearInterval(timer))
  return { left: () => chunks.length }
}

const createBody = (bytes: number): string =>
  JSON.stringify({ name: 'slow', language: 'go', runtime: 'wasmkube' }).padEnd(bytes, ' ')
const postHead = (length: number): string =>
  `POST /api/v1/applications HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`

t.test(
  'the defaults as configured on the real server: headers in 10 s, checked every second, idle keep-alive 72 s, 1000 connections',
  async (t) => {
    const control = await startTestControl(t, 'pglite')
    const server = control.server.app.server
    t.equal(server.headersTimeout, 10_000)
    // Node only looks at headersTimeout every connectionsCheckingInterval (30 s unless set):
    // the bound an operator sets holds to within this.
    t.equal((server as typeof server & { connectionsCheckingInterval: number }).connectionsCheckingInterval, 1_000)
    t.equal(server.keepAliveTimeout, 72_000)
    t.equal(server.maxConnections, 1_000)
    t.equal(control.config.minBodyBytes, 1024)
    t.equal(control.config.bodyRateWindowMs, 10_000)
    // A body trickled at 1 byte every 2 s brings 5 bytes per window: cut at the first window's end.
    t.ok(control.config.bodyRateWindowMs * 2 <= 20_000 && 10_000 / 2_000 < control.config.minBodyBytes)
  },
)

t.test('headers trickled past --headers-timeout: 408 and the connection closes', async (t) => {
  const control = await startTestControl(t, 'pglite', ['--dev-insecure-skip-auth', '--headers-timeout', '300ms'])
  const raw = open(t, control.server.port)
  raw.socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n')
  const headers = trickle(
    raw,
    Array.from({ length: 200 }, (_, i) => `X-Slow-${i}: a\r\n`),
    50,
  )
  await withTimeout(raw.closed, 30_000, 'the server to close the connection')
  t.match(raw.received(), /^HTTP\/1\.1 408 /, 'a 408')
  t.ok(
    headers.left() > 0,
    `closed by the server with ${headers.left()} of 200 header lines still unsent, not when the client stopped`,
  )
})

t.test('a body trickled below --min-body-bytes per --body-rate-window: the connection is cut', async (t) => {
  const control = await startTestControl(t, 'pglite', [
    '--dev-insecure-skip-auth',
    '--min-body-bytes',
    '40',
    '--body-rate-window',
    '200ms',
  ])
  const raw = open(t, control.server.port)
  const body = createBody(1000)
  raw.socket.write(postHead(body.length))
  // 1 byte every 50 ms: 4 bytes a window, a tenth of the rate; the whole body would take 50 s.
  const sent = trickle(raw, body.split(''), 50)
  await withTimeout(raw.closed, 30_000, 'the server to cut the connection')
  t.ok(
    sent.left() > 0,
    `cut with ${sent.left()} of ${body.length} bytes unsent, not after the 50 s the body would take`,
  )
  t.equal(raw.received(), '', 'no answer: the connection is closed')
  t.ok(
    control.logs.some(
      (l) => l.msg === 'request body slower than the minimum rate: connection closed' && l.level === 30,
    ),
    'an info line says why',
  )
  const list = await control.call('GET', '/applications')
  t.same(list.body, [], 'nothing was created')
})

// An early answer (here a 401: the check runs before authentication reads anything) leaves
// the rest of the body to be read off the socket: a trickle there is cut all the same.
t.test('a body still trickling after an early answer: the connection is cut', async (t) => {
  const control = await startTestControl(t, 'pglite', [
    '--oidc-issuer',
    'http://127.0.0.1:9/',
    '--min-body-bytes',
    '40',
    '--body-rate-window',
    '200ms',
  ])
  const raw = open(t, control.server.port)
  const body = createBody(1000)
  raw.socket.write(postHead(body.length))
  const sent = trickle(raw, body.split(''), 50)
  await withTimeout(raw.closed, 30_000, 'the server to cut the connection')
  t.match(raw.received(), /^HTTP\/1\.1 401 /, 'answered first')
  t.ok(
    sent.left() > 0,
    `then cut with ${sent.left()} of ${body.length} bytes unsent, not after the 50 s the body would take`,
  )
})

t.test('a slow but honest body above the rate passes', async (t) => {
  const control = await startTestControl(t, 'pglite', [
    '--dev-insecure-skip-auth',
    '--min-body-bytes',
    '40',
    '--body-rate-window',
    '200ms',
  ])
  const raw = open(t, control.server.port)
  const body = createBody(1200)
  raw.socket.write(postHead(body.length))
  // 40 bytes every 50 ms: 160 a window, four times the minimum; 1.5 s in all, over seven windows.
  trickle(raw, body.match(/[^]{1,40}/g) ?? [], 50)
  await withTimeout(
    new Promise<void>((resolve) =>
      raw.socket.on('data', () => {
        if (raw.received().includes('\r\n\r\n')) resolve()
      }),
    ),
    10_000,
    'the answer',
  )
  t.match(raw.received(), /^HTTP\/1\.1 201 /)
})

t.test('an idle keep-alive connection is closed after --keep-alive-timeout', async (t) => {
  const control = await startTestControl(t, 'pglite', ['--dev-insecure-skip-auth', '--keep-alive-timeout', '200ms'])
  const raw = open(t, control.server.port)
  const answers = (count: number): Promise<void> =>
    new Promise<void>((resolve) => {
      const check = (): void => {
        if (raw.received().split('HTTP/1.1 200').length - 1 >= count && raw.received().endsWith('ok')) resolve()
      }
      raw.socket.on('data', check)
      check()
    })
  raw.socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n')
  await withTimeout(answers(1), 5_000, 'the answer')
  // Not idle long yet: the same connection still takes a request at once.
  raw.socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n')
  await withTimeout(answers(2), 5_000, 'the second answer on the kept connection')
  await withTimeout(raw.closed, 30_000, 'the idle connection to be closed')
  t.match(
    raw.received(),
    /^HTTP\/1\.1 200 [^]*keep-alive: timeout=0/i,
    'the answer announced the timeout (rounded down to seconds)',
  )
  t.equal(raw.received().split('HTTP/1.1 200').length - 1, 2, 'both requests answered before the idle close')
})

t.test('connections past --max-connections are closed on accept; the ones before keep working', async (t) => {
  const control = await startTestControl(t, 'pglite', ['--dev-insecure-skip-auth', '--max-connections', '2'])
  const healthz = async (raw: Raw): Promise<void> => {
    const before = raw.received().length
    raw.socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n')
    await withTimeout(
      new Promise<void>((resolve) => {
        const check = (): void => {
          if (raw.received().slice(before).endsWith('ok')) resolve()
        }
        raw.socket.on('data', check)
      }),
      5_000,
      'the answer',
    )
  }
  const first = open(t, control.server.port)
  const second = open(t, control.server.port)
  await healthz(first)
  await healthz(second)
  const third = open(t, control.server.port)
  await third.connected
  third.socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n')
  await withTimeout(third.closed, 5_000, 'the third connection to be closed')
  t.equal(third.received(), '', 'the third got no answer')
  await healthz(first)
  t.pass('the first still answers')
})
