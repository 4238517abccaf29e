// The kept-alive connections of one loaded generation (control/src/local/connections.ts), against
// a real loopback server: invokes reuse one connection; a generation retired while a request is
// in flight lets that request finish, then its connections (the idle one too) close; retired
// with none in flight, they close at once.
import http from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { once } from 'node:events'
import t from 'tap'
import type { Test } from 'tap'
import { createConnections } from '@session-relay/control/local/connections'
import { direct, sendInvoke } from '@session-relay/control/runtime/send-invoke'
import type { PreparedInvoke } from '@session-relay/control/runtime/runtime'
import { until } from '../helpers/wait.js'

const GET: PreparedInvoke = { method: 'GET', path: '/', headers: { 'content-length': ['0'] }, body: Buffer.alloc(0) }

/** A server answering `ok`, or holding the answer of `/hold` until `release()`; the connections it accepted, and those closed. */
async function server(
  t: Test,
): Promise<{ url: string; accepted: Socket[]; closed: () => number; held: Promise<void>; release: () => void }> {
  const accepted: Socket[] = []
  let closed = 0
  let release = (): void => {}
  let arrived = (): void => {}
  const held = new Promise<void>((resolve) => {
    arrived = resolve
  })
  const listener = http.createServer((request, response) => {
    if (request.url === '/hold') {
      release = () => response.writeHead(200, { 'content-type': 'text/plain' }).end('held')
      arrived()
      return
    }
    response.writeHead(200, { 'content-type': 'text/plain' }).end('ok')
  })
  listener.on('connection', (socket: Socket) => {
    accepted.push(socket)
    socket.on('close', () => {
      closed++
    })
  })
  listener.listen(0, '127.0.0.1')
  await once(listener, 'listening')
  t.teardown(() => {
    listener.closeAllConnections()
    listener.close()
  })
  return {
    url: `http://127.0.0.1:${(listener.address() as AddressInfo).port}`,
    accepted,
    closed: () => closed,
    held,
    release: () => release(),
  }
}

async function invoke(
  connections: ReturnType<typeof createConnections>,
  url: string,
  request = GET,
): Promise<{ status: number; body: string }> {
  const done = connections.use()
  try {
    return await sendInvoke(direct(url, connections.agent), request, 10_000)
  } finally {
    done()
  }
}

t.test('invokes on one generation reuse one connection', async (t) => {
  const { url, accepted } = await server(t)
  const connections = createConnections()
  t.teardown(() => connections.retire())
  for (let i = 0; i < 5; i++) t.match(await invoke(connections, url), { status: 200, body: 'ok' })
  t.equal(accepted.length, 1, 'one connection for five invokes')
})

t.test('retired with a request in flight: it finishes, then the connections close', async (t) => {
  const { url, accepted, closed, held, release } = await server(t)
  const connections = createConnections()
  const inFlight = invoke(connections, url, { ...GET, path: '/hold' })
  await held
  // A second connection, idle once answered, while the first holds the request in flight.
  t.match(await invoke(connections, url), { status: 200, body: 'ok' })
  t.equal(accepted.length, 2)
  connections.retire()
  t.equal(closed(), 0, 'nothing closed under the request in flight')
  release()
  t.match(await inFlight, { status: 200, body: 'held' }, 'the request in flight answered')
  await t.resolves(
    until(() => closed() === 2, 5000, 'both closed'),
    'both connections closed once it ended',
  )
})

t.test('retired with nothing in flight: its kept-alive connection closes at once', async (t) => {
  const { url, closed } = await server(t)
  const connections = createConnections()
  t.match(await invoke(connections, url), { status: 200 })
  connections.retire()
  await t.resolves(
    until(() => closed() === 1, 5000, 'closed'),
    'closed',
  )
})
