// Requests refused on every route whatever uWebSockets.js makes of them: two different
// Content-Length headers (RFC 9112 §6.3) and an Upgrade to anything but websocket (h2c).
// Raw sockets, since fetch and ws would never send either.
import { connect } from 'node:net'
import t from 'tap'
import { createSession, startTestRelay } from '../helpers/relay.js'

type Answer = { status: number; head: string; body: string; closed: Promise<void> }

/** Writes `request` as is and reads the first response: status line, head, and body by its Content-Length. */
function rawRequest(port: number, request: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(request))
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()))
    let received = Buffer.alloc(0)
    const tryParse = (): void => {
      const end = received.indexOf('\r\n\r\n')
      if (end === -1) return
      const head = received.subarray(0, end).toString('latin1')
      const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0)
      if (received.length < end + 4 + length) return
      socket.off('data', onData)
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? -1)
      resolve({ status, head, body: received.subarray(end + 4, end + 4 + length).toString(), closed })
    }
    const onData = (chunk: Buffer): void => {
      received = Buffer.concat([received, chunk])
      tryParse()
    }
    socket.on('data', onData)
    socket.on('error', reject)
    t.teardown(() => {
      socket.destroy()
    })
  })
}

t.test('two different Content-Length headers: 400 and the connection closes, on every route', async (t) => {
  const relay = await startTestRelay(t)
  const cases: Array<[string, string]> = [
    ['admin create', 'POST /admin/sessions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 5\r\n\r\n{}xyz'],
    ['health', 'GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nContent-Length: 3\r\n\r\nabc'],
    ['an unknown path', 'GET /nowhere HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 0\r\n\r\n'],
  ]
  for (const [what, request] of cases) {
    const answer = await rawRequest(relay.port, request)
    t.equal(answer.status, 400, `${what}: 400`)
    t.same(JSON.parse(answer.body), { error: 'conflicting content-length headers' }, `${what}: the relay's error body`)
    await answer.closed
    t.pass(`${what}: the relay closed the connection, whose framing is unknown`)
  }
  t.equal(relay.sessionCount(), 0, 'the refused create created nothing')
})

t.test('the same Content-Length twice is one length (RFC 9112 §6.3 allows either)', async (t) => {
  const relay = await startTestRelay(t)
  const answer = await rawRequest(
    relay.port,
    'POST /admin/sessions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}',
  )
  t.equal(answer.status, 201)
})

t.test('Upgrade: h2c answers 400 at the WebSocket path and on the admin API', async (t) => {
  const relay = await startTestRelay(t)
  const session = await createSession(relay)
  const h2c = 'Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n'
  // Everything a WebSocket handshake needs but the protocol: uWS 20.30 answered this 101.
  const atRelay = await rawRequest(
    relay.port,
    `GET /relay/${session.id}?token=${session.initiator_token} HTTP/1.1\r\nHost: x\r\n${h2c}` +
      'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n',
  )
  t.equal(atRelay.status, 400, 'WebSocket path: 400')
  t.same(JSON.parse(atRelay.body), { error: 'unsupported upgrade: only websocket is accepted' })
  const atAdmin = await rawRequest(relay.port, `GET /admin/sessions HTTP/1.1\r\nHost: x\r\n${h2c}\r\n`)
  t.equal(atAdmin.status, 400, 'admin path: 400')
  t.same(JSON.parse(atAdmin.body), { error: 'unsupported upgrade: only websocket is accepted' })

  // The slot was never taken: a real WebSocket handshake still gets it.
  const ok = await rawRequest(
    relay.port,
    `GET /relay/${session.id}?token=${session.initiator_token} HTTP/1.1\r\nHost: x\r\n` +
      'Connection: Upgrade\r\nUpgrade: WebSocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n',
  )
  t.equal(ok.status, 101, 'Upgrade: websocket (any case) still switches')
})
