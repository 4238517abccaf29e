// A TCP proxy on loopback whose connections a test can cut without a close frame: a network
// drop as the relay and its peers see one.
import { connect, createServer } from 'node:net'
import type { AddressInfo, Socket } from 'node:net'
import type { Test } from 'tap'

export async function cuttableProxy (t: Test, port: number): Promise<{ port: number; cut: () => void; stop: () => void }> {
  const sockets = new Set<Socket>()
  const server = createServer((client) => {
    const upstream = connect(port, '127.0.0.1')
    for (const s of [client, upstream]) {
      sockets.add(s)
      s.on('close', () => sockets.delete(s))
      s.on('error', () => {})
    }
    client.pipe(upstream).pipe(client)
  })
  t.teardown(() => { for (const s of sockets) s.destroy(); server.close() })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    port: (server.address() as AddressInfo).port,
    cut: () => { for (const s of sockets) s.destroy() },
    /** Cut every connection and refuse new ones. */
    stop: () => { server.close(); for (const s of sockets) s.destroy() },
  }
}
