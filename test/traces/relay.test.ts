// The relay's traces (issue 42), as an operator turns them on: the compiled relay with
// OTEL_EXPORTER_OTLP_ENDPOINT naming a real OpenTelemetry Collector and real OIDC auth. The
// admin API's requests as server spans (method, route template, status), a session's life as a
// span with one child per attach, closed with its code and the bytes of each direction, none of
// the admin token, the slot tokens or a query string in anything exported; without an endpoint
// no OpenTelemetry module is loaded at all.
import { randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { readFileSync } from 'node:fs'
import { connect } from 'node:net'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import t from 'tap'
import type { Test } from 'tap'
import { startOidcProvider } from '../fixtures/oidc-provider.js'
import { scratchDir } from '../helpers/control-process.js'
import { attribute, startCollector } from '../helpers/otel-collector.js'
import type { TestCollector } from '../helpers/otel-collector.js'
import { processRunner } from '../helpers/process.js'
import type { RunningProcess } from '../helpers/process.js'
import { attach } from '../helpers/relay.js'
import type { Created, TestPeer } from '../helpers/relay.js'

t.setTimeout(240_000)

const AUDIENCE = 'https://relay.test'
const mainJs = fileURLToPath(new URL('../../relay/dist/main.js', import.meta.url))
const loadedModules = pathToFileURL(fileURLToPath(new URL('../fixtures/loaded-modules.mjs', import.meta.url))).href
const { start } = processRunner({ mainJs, ownEnv: /^(RELAY_|UWS_|OTEL_)/, listening: 'relay listening' })

type ExportedSpan = ReturnType<TestCollector['spans']>[number]

async function tracedRelay(t: Test, collector: TestCollector, issuer: string): Promise<RunningProcess> {
  return start(t, ['--addr', '127.0.0.1:0', '--oidc-issuer', issuer, '--oidc-audience', AUDIENCE], {
    OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint,
    OTEL_BSP_SCHEDULE_DELAY: '50',
  })
}

/** Resolves once `peer` has received `bytes` payload bytes in all. */
async function receivedBytes(peer: TestPeer, count: number, bytes: number): Promise<void> {
  const got = await peer.receive(count)
  const total = got.reduce((sum, message) => sum + message.data.byteLength, 0)
  if (total !== bytes) throw new Error(`received ${total} bytes, expected ${bytes}`)
}

const named = (spans: ExportedSpan[], name: string): ExportedSpan[] => spans.filter((span) => span.name === name)

t.test('admin requests and a session life as spans; no token or query string exported', async (t) => {
  const collector = await startCollector(t)
  const oidc = await startOidcProvider()
  t.teardown(() => oidc.close())
  const relay = await tracedRelay(t, collector, oidc.issuer)
  const http = `http://127.0.0.1:${relay.port}`
  const token = await oidc.token()
  const auth = { authorization: `Bearer ${token}` }
  const marker = `q-${randomBytes(8).toString('hex')}`

  // The caller's trace: the create request's span is its child, the session's span the request's.
  const traceId = randomBytes(16).toString('hex')
  const callerSpan = randomBytes(8).toString('hex')
  const created = await fetch(`${http}/admin/sessions`, {
    method: 'POST',
    headers: { ...auth, traceparent: `00-${traceId}-${callerSpan}-01` },
  })
  t.equal(created.status, 201)
  const session = (await created.json()) as Created

  const statuses: Array<[string, string, Record<string, string>, number]> = [
    ['GET', `/admin/sessions/${session.id}?access_token=${token}&marker=${marker}`, auth, 200],
    ['GET', `/admin/sessions?marker=${marker}`, auth, 200],
    ['GET', '/admin/sessions', { authorization: `Bearer ${marker}` }, 401],
    ['DELETE', `/admin/sessions/${'0'.repeat(session.id.length)}`, auth, 404],
    ['PUT', '/admin/sessions', auth, 405],
    ['PURGE', `/admin/sessions/${session.id}`, auth, 405],
  ]
  for (const [method, path, headers, status] of statuses) {
    const response = await fetch(`${http}${path}`, { method, headers })
    t.equal(response.status, status, `${method} ${path.split('?')[0]}`)
    await response.arrayBuffer()
  }

  // A create whose client goes away before its body is complete: the span ends all the same.
  const cut = connect(relay.port, '127.0.0.1')
  cut.end(
    `POST /admin/sessions HTTP/1.1\r\nhost: relay\r\nauthorization: Bearer ${token}\r\ncontent-length: 64\r\n\r\n{`,
  )
  await once(cut, 'close')

  // The session's life: both attach (the responder's token in the query string, as a browser
  // sends it), 300 bytes one way and 50 the other, the responder lost and back (another
  // attach), 7 bytes more, then the initiator's close frame with its own code.
  const url = `ws://127.0.0.1:${relay.port}/relay/${session.id}`
  const initiator = await attach(url, { token: session.initiator_token })
  let responder = await attach(url, { token: session.responder_token, query: true })
  initiator.socket.send(Buffer.alloc(100, 1))
  initiator.socket.send(Buffer.alloc(200, 2))
  responder.socket.send(Buffer.alloc(50, 3))
  await receivedBytes(responder, 2, 300)
  await receivedBytes(initiator, 1, 50)
  const lost = responder.closed
  responder.socket.terminate()
  await lost
  responder = await attach(url, { token: session.responder_token, query: true })
  responder.socket.send(Buffer.alloc(7, 4))
  await receivedBytes(initiator, 2, 57)
  initiator.socket.close(4321, 'done here')
  t.same(await responder.closed, { code: 4321, reason: 'done here' }, 'the peer gets the close frame')

  const deleted = await fetch(`${http}/admin/sessions/${session.id}`, { method: 'DELETE', headers: auth })
  t.equal(deleted.status, 204, 'a closed session is deleted')

  const spans = await collector.waitFor(
    (spans) =>
      named(spans, 'relay session').length === 1 &&
      named(spans, 'relay attach').length === 3 &&
      named(spans, 'DELETE /admin/sessions/{id}').length === 2,
    30_000,
    'the session, its three attaches and both deletes',
  )
  t.ok(
    spans.every((span) => span.service === 'session-relay-relay'),
    'every span is the relay service',
  )

  const server = spans.filter((span) => span.kind === 2 && attribute(span.attributes, 'error.type') !== 'aborted')
  const aborted = await collector.waitFor(
    (spans) => spans.some((span) => attribute(span.attributes, 'error.type') === 'aborted'),
    30_000,
    'the aborted request',
  )
  const abortedSpan = aborted.find((span) => attribute(span.attributes, 'error.type') === 'aborted')
  t.equal(abortedSpan?.name, 'POST /admin/sessions', 'a request the client abandoned has its span')
  t.equal(attribute(abortedSpan?.attributes, 'http.response.status_code'), undefined, 'and no status')
  const seen = server.map((span) => [
    span.name,
    attribute(span.attributes, 'http.request.method'),
    attribute(span.attributes, 'http.route'),
    Number(attribute(span.attributes, 'http.response.status_code')),
  ])
  t.same(
    seen.sort(),
    [
      ['DELETE /admin/sessions/{id}', 'DELETE', '/admin/sessions/{id}', 204],
      ['DELETE /admin/sessions/{id}', 'DELETE', '/admin/sessions/{id}', 404],
      ['GET /admin/sessions', 'GET', '/admin/sessions', 200],
      ['GET /admin/sessions', 'GET', '/admin/sessions', 401],
      ['GET /admin/sessions/{id}', 'GET', '/admin/sessions/{id}', 200],
      ['POST /admin/sessions', 'POST', '/admin/sessions', 201],
      ['PUT /admin/sessions', 'PUT', '/admin/sessions', 405],
      ['_OTHER /admin/sessions/{id}', '_OTHER', '/admin/sessions/{id}', 405],
    ].sort(),
    'one server span per admin request: method, route template, status',
  )

  const create = server.find((span) => span.name === 'POST /admin/sessions')!
  t.equal(create.traceId, traceId, "the create request continues the caller's trace")
  t.equal(create.parentSpanId, callerSpan)

  const [life] = named(spans, 'relay session')
  t.equal(life?.traceId, traceId, 'the session is in the trace of the request that created it')
  t.equal(life?.parentSpanId, create.spanId)
  const lifeAttr = (key: string): unknown => attribute(life?.attributes, key)
  t.equal(lifeAttr('relay.session.id'), session.id)
  t.equal(Number(lifeAttr('relay.session.close_code')), 4321, "the initiator's close code")
  t.equal(lifeAttr('relay.session.close_reason'), 'peer_closed')
  t.equal(Number(lifeAttr('relay.session.bytes_in')), 357, 'every byte both peers sent')
  t.equal(Number(lifeAttr('relay.session.bytes_out')), 357, 'every byte handed to a peer')
  t.equal(Number(lifeAttr('relay.session.initiator_to_responder_bytes')), 300)
  t.equal(Number(lifeAttr('relay.session.responder_to_initiator_bytes')), 57)

  const attaches = named(spans, 'relay attach')
  t.ok(
    attaches.every((span) => span.parentSpanId === life?.spanId && span.traceId === traceId),
    "every attach is the session's child",
  )
  const ends = attaches
    .map((span) => `${attribute(span.attributes, 'relay.slot')}:${attribute(span.attributes, 'relay.attach.end')}`)
    .sort()
  t.same(ends, ['initiator:closed', 'responder:closed', 'responder:dropped'], 'each attach and how it ended')
  const [dropped] = attaches.filter((span) => attribute(span.attributes, 'relay.attach.end') === 'dropped')
  t.ok(BigInt(dropped!.endTimeUnixNano) <= BigInt(life!.endTimeUnixNano), 'inside the session')

  const exported = collector.exported()
  t.notMatch(exported, token, 'the admin token is nowhere in what was exported')
  t.notMatch(exported, session.initiator_token, "nor the initiator's slot token")
  t.notMatch(exported, session.responder_token, "nor the responder's, sent in a query string")
  t.notMatch(exported, marker, 'nor a query string or a refused bearer value')
  t.notMatch(exported, 'access_token', 'no query string at all')
})

t.test('without an endpoint no OpenTelemetry module is loaded; with one the SDK is', async (t) => {
  const collector = await startCollector(t)
  const dir = scratchDir(t)
  // The same run twice: a session created, attached, carrying a message, and ended by SIGINT.
  const run = async (name: string, env: Record<string, string>): Promise<string[]> => {
    const file = join(dir, name)
    const relay = await start(t, ['--no-auth', '--addr', '127.0.0.1:0'], {
      ...env,
      NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import=${loadedModules}`,
      LOADED_MODULES_MATCH: '@opentelemetry',
      LOADED_MODULES_FILE: file,
    })
    const http = `http://127.0.0.1:${relay.port}`
    const session = (await (await fetch(`${http}/admin/sessions`, { method: 'POST' })).json()) as Created
    const url = `ws://127.0.0.1:${relay.port}/relay/${session.id}`
    const initiator = await attach(url, { token: session.initiator_token })
    const responder = await attach(url, { token: session.responder_token })
    initiator.socket.send('hello')
    await responder.receive(1)
    relay.child.kill('SIGINT')
    t.same(await relay.exited, { code: 0, signal: null }, `${name}: stopped`)
    return readFileSync(file, 'utf8').split('\n').filter(Boolean)
  }

  const off = await run('off', {})
  t.same(off, [], 'nothing of OpenTelemetry, not even its API, without an endpoint')
  const disabled = await run('disabled', { OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint, OTEL_SDK_DISABLED: 'true' })
  t.same(disabled, [], 'nor with the SDK disabled')

  const on = await run('on', { OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint, OTEL_BSP_SCHEDULE_DELAY: '50' })
  t.ok(
    on.some((url) => url.includes('/@opentelemetry/sdk-trace-base/')),
    'the hook sees the SDK when an endpoint is set',
  )
  // No context manager: nothing puts Node's async hooks on every callback (the data plane's).
  t.same(
    on.filter((url) => /\/@opentelemetry\/(context-async-hooks|sdk-trace-node)\//.test(url)),
    [],
    'and no context manager',
  )
  // SIGINT closed the session with 1001: its span left before the process did.
  const closed = collector
    .spans()
    .find(
      (span) =>
        span.name === 'relay session' && Number(attribute(span.attributes, 'relay.session.close_code')) === 1001,
    )
  t.ok(closed, 'the session the stop closed was exported before the exit')
  t.equal(Number(attribute(closed?.attributes, 'relay.session.bytes_out')), 5)
})
