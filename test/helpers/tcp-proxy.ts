// A TCP proxy on loopback whose connections a test can cut without a close frame: a network
// drop as the relay and its peers see one.
import { connect, createServer } from 'node:net'
import type { AddressInfo, Socket } from 'node:net'
import type { Test } from 'tap'

export type CuttableProxy = {
  port: number
  cut: () => void
  stop: () => void
  /** Cut every connection and drop new ones at once (a network partition) until resume(). */
  pause: () => void
  resume: () => void
}

export async function cuttableProxy(t: Test, port: number): Promise<CuttableProxy> {
  const sockets = new Set<Socket>()
  let paused = false
  const server = createServer((client) => {
    if (paused) {
      client.destroy()
      return
    }
    const upstream = connect(port, '127.0.0.1')
    for (const s of [client, upstream]) {
      sockets.add(s)
      s.on('close', () => sockets.delete(s))
      s.on('error', () => {})
    }
    client.pipe(upstream).pipe(client)
  })
  t.teardown(() => {
    for (const s of sockets) s.destroy()
    server.close()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    port: (server.address() as AddressInfo).port,
    cut: () => {
      for (const s of sockets) s.destroy()
    },
    /** Cut every connection and refuse new ones. */
    stop: () => {
      server.close()
      for (const s of sockets) s.destroy()
    },
    pause: () => {
      paused = true
      for (const s of sockets) s.destroy()
    },
    resume: () => {
      paused = false
    },
  }
}
