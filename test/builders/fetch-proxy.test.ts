// The fetch proxy, a build's only way to the network, against a real SOCKS5 client on its Unix
// socket: it tunnels to a registry on its list and nowhere else (no other name, no address
// literal, no other port, no name resolving to an internal address), says why in the build
// log, and stays bounded (connections at once, handshake size). The registry is a loopback
// server here, so these tests let loopback through where they say so.
import { mkdtemp, rm } from 'node:fs/promises'
import { connect, createServer } from 'node:net'
import type { Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import fc from 'fast-check'
import t from 'tap'
import type { Test } from 'tap'
import { isInternal, startFetchProxy } from '@session-relay/builders/sandbox/fetch-proxy'
import type { FetchProxyOptions } from '@session-relay/builders/sandbox/fetch-proxy'
import { fuzzOptions } from '../helpers/fuzz.js'

/** An upstream that echoes what it reads, counting connections. */
async function echoServer(t: Test): Promise<{ port: number; connections: () => number }> {
  let connections = 0
  const server = createServer((socket) => {
    connections++
    socket.on('error', () => socket.destroy())
    socket.pipe(socket)
  })
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  return { port: typeof address === 'object' && address !== null ? address.port : 0, connections: () => connections }
}

async function proxy(
  t: Test,
  options: Partial<FetchProxyOptions> & { hosts: string[] },
): Promise<{ socket: string; log: string[] }> {
  const dir = await mkdtemp(join(tmpdir(), 'fetch-proxy-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const log: string[] = []
  const started = await startFetchProxy({ socket: join(dir, 'fetch.sock'), log: (line) => log.push(line), ...options })
  t.teardown(() => started.close())
  return { socket: join(dir, 'fetch.sock'), log }
}

type Answer = { code: number | null; echoed: string }

/** One SOCKS5 CONNECT through the socket; on success sends `ping` and reads it back. */
function socks(socket: string, request: Buffer, methods = [0x00]): Promise<Answer> {
  return new Promise((resolve) => {
    const client: Socket = connect(socket)
    let received = Buffer.alloc(0)
    let stage = 'greeting'
    let code: number | null = null
    client.on('connect', () => client.write(Buffer.from([0x05, methods.length, ...methods])))
    client.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk])
      if (stage === 'greeting' && received.length >= 2) {
        if (received[1] !== 0x00) {
          code = received[1] as number
          return client.end()
        }
        received = received.subarray(2)
        stage = 'request'
        client.write(request)
      }
      if (stage === 'request' && received.length >= 10) {
        code = received[1] as number
        received = received.subarray(10)
        stage = 'tunnel'
        if (code === 0) client.write('ping')
      }
      if (stage === 'tunnel' && received.toString() === 'ping') client.end()
    })
    client.on('error', () => client.destroy())
    client.on('close', () => resolve({ code, echoed: stage === 'tunnel' ? received.toString() : '' }))
  })
}

function byName(host: string, port: number, command = 0x01): Buffer {
  const name = Buffer.from(host, 'latin1')
  return Buffer.concat([Buffer.from([0x05, command, 0x00, 0x03, name.length]), name, u16(port)])
}

function u16(port: number): Buffer {
  const buffer = Buffer.alloc(2)
  buffer.writeUInt16BE(port)
  return buffer
}

const loopbackRegistry = (host: string): Promise<string[]> =>
  Promise.resolve(host === 'registry.test' ? ['127.0.0.1'] : ['93.184.215.14'])
const onlyLoopbackAllowed = (address: string): boolean => address !== '127.0.0.1' && isInternal(address)

t.test('a registry on the list is tunnelled; everything else is refused with the reason logged', async (t) => {
  const upstream = await echoServer(t)
  const { socket, log } = await proxy(t, {
    hosts: ['registry.test'],
    port: upstream.port,
    resolve: loopbackRegistry,
    refused: onlyLoopbackAllowed,
  })
  t.same(await socks(socket, byName('registry.test', upstream.port)), { code: 0, echoed: 'ping' })
  t.same(
    await socks(socket, byName('REGISTRY.test', upstream.port)),
    { code: 0, echoed: 'ping' },
    'names are case-blind',
  )
  const refusals: Array<[string, Buffer, number]> = [
    ['another name', byName('example.com', upstream.port), 0x02],
    ['a longer name', byName('registry.test.evil', upstream.port), 0x02],
    ['another port', byName('registry.test', 22), 0x02],
    ['an IPv4 literal', Buffer.concat([Buffer.from([5, 1, 0, 1, 127, 0, 0, 1]), u16(upstream.port)]), 0x02],
    [
      'an IPv6 literal',
      Buffer.concat([Buffer.from([5, 1, 0, 4]), Buffer.alloc(15), Buffer.from([1]), u16(upstream.port)]),
      0x02,
    ],
    ['BIND', byName('registry.test', upstream.port, 0x02), 0x07],
    ['UDP ASSOCIATE', byName('registry.test', upstream.port, 0x03), 0x07],
  ]
  for (const [what, request, code] of refusals) t.same(await socks(socket, request), { code, echoed: '' }, what)
  t.same(await socks(socket, byName('registry.test', upstream.port), [0x02]), { code: 0xff, echoed: '' }, 'auth only')
  t.equal(upstream.connections(), 2, 'only the two allowed tunnels reached the upstream')
  t.match(log.join('\n'), /connected to registry\.test:\d+ \(127\.0\.0\.1\)/)
  t.match(log.join('\n'), /refused example\.com:\d+: not a package registry of this build/)
  t.match(log.join('\n'), /refused an address literal/)
})

t.test("a registry's name that resolves to an internal address is refused: DNS cannot point it home", async (t) => {
  const upstream = await echoServer(t)
  const { socket, log } = await proxy(t, { hosts: ['registry.test'], port: upstream.port, resolve: loopbackRegistry })
  t.same(await socks(socket, byName('registry.test', upstream.port)), { code: 0x02, echoed: '' })
  t.equal(upstream.connections(), 0)
  t.match(log.join('\n'), /refused registry\.test: it resolves to 127\.0\.0\.1/)
  const unresolved = await proxy(t, {
    hosts: ['registry.test'],
    port: upstream.port,
    resolve: () => Promise.reject(new Error('ENOTFOUND')),
  })
  t.same(await socks(unresolved.socket, byName('registry.test', upstream.port)), { code: 0x04, echoed: '' })
})

t.test('a name with control characters is refused and logged escaped', async (t) => {
  const { socket, log } = await proxy(t, { hosts: ['registry.test'], resolve: loopbackRegistry })
  t.same(await socks(socket, byName('registry.test\n==> forged step', 443)), { code: 0x02, echoed: '' })
  t.notMatch(log.join('\n'), /\n==> forged/, 'the build log gets no forged line')
})

t.test('bounded: connections at once, and a handshake that never ends or grows', async (t) => {
  const { socket, log } = await proxy(t, { hosts: ['registry.test'], maxConnections: 2 })
  const idle = [connect(socket), connect(socket)]
  t.teardown(() => idle.forEach((client) => client.destroy()))
  await Promise.all(idle.map((client) => new Promise((resolve) => client.once('connect', resolve))))
  await new Promise<void>((resolve) => {
    const third = connect(socket)
    third.on('error', () => {})
    third.on('close', () => resolve())
  })
  t.match(log.join('\n'), /refused a connection: 2 already open/)
  const flood = connect(socket)
  flood.on('error', () => {})
  flood.write(Buffer.concat([Buffer.from([0x05, 0xff]), Buffer.alloc(4096, 1)]))
  await new Promise((resolve) => flood.on('close', resolve))
  t.pass('a handshake of more than a few hundred bytes is cut')
})

t.test('fast-check: only a CONNECT by a listed name on the listed port is tunnelled', async (t) => {
  const upstream = await echoServer(t)
  const { socket } = await proxy(t, {
    hosts: ['registry.test', 'index.registry.test'],
    port: upstream.port,
    resolve: loopbackRegistry,
    refused: onlyLoopbackAllowed,
  })
  const name = fc.oneof(
    fc.constantFrom(
      'registry.test',
      'index.registry.test',
      'Registry.Test',
      'registry.test.',
      'xregistry.test',
      'localhost',
    ),
    fc.string({ maxLength: 40 }),
  )
  await fc.assert(
    fc.asyncProperty(
      name,
      fc.constantFrom(upstream.port, 443, 80, 0),
      fc.constantFrom(1, 2, 3),
      async (host, port, command) => {
        const answer = await socks(socket, byName(host, port, command))
        const listed = ['registry.test', 'index.registry.test'].includes(host.toLowerCase())
        const expected = listed && port === upstream.port && command === 1
        if ((answer.code === 0) !== expected)
          throw new Error(`${JSON.stringify(host)}:${port} ${command}: ${answer.code}`)
        if (expected && answer.echoed !== 'ping') throw new Error('the tunnel did not carry the bytes')
      },
    ),
    fuzzOptions(),
  )
})

t.test('internal addresses: loopback, private, link-local, shared, multicast and their IPv6 forms', async (t) => {
  for (const address of [
    '127.0.0.1',
    '10.1.2.3',
    '172.16.0.1',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '0.0.0.0',
    '224.0.0.1',
    '::1',
    '::',
    'fe80::1',
    'fd00::1',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::ffff:a9fe:a9fe',
    '64:ff9b::a00:1',
    'not-an-address',
  ])
    t.ok(isInternal(address), address)
  for (const address of ['93.184.215.14', '203.0.113.80', '2606:4700::1111', '::ffff:5db8:d70e'])
    t.notOk(isInternal(address), address)
})
