// A loopback port nothing listens on, for a server whose port must be known before it starts
// (or for a connection that must be refused).
//
// Not one the kernel hands out for port 0: between this probe and the server's own bind, any
// other test's outgoing connection or port-0 listener may take an ephemeral port (Prometheus
// once failed to start with "address already in use" that way). So the port comes from below
// the ephemeral range, where only another caller of this function looks, at random.
import { readFileSync } from 'node:fs'
import { createServer } from 'node:net'

const BELOW = 10_000

function ephemeralStart(): number {
  try {
    const [low] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number)
    return low !== undefined && Number.isInteger(low) && low > BELOW + 1_000 ? low : 32_768
  } catch {
    return 32_768
  }
}

function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer()
    server.once('error', () => resolve(false))
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)))
  })
}

export async function freePort(): Promise<number> {
  const top = ephemeralStart()
  for (let tries = 0; tries < 100; tries++) {
    const port = BELOW + Math.floor(Math.random() * (top - BELOW))
    if (await bindable(port)) return port
  }
  throw new Error(`no free loopback port between ${BELOW} and ${top}`)
}
