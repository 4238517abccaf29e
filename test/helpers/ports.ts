// A loopback port nothing listens on, for a server whose port must be known before it starts
// (or for a connection that must be refused).
import { createServer } from 'node:net'
import type { AddressInfo } from 'node:net'

export function freePort (): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer().once('error', reject).listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo
      server.close(() => resolve(port))
    })
  })
}
