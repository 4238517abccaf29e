import { createServer } from 'node:net'
import { getSystemErrorMap } from 'node:util'

/**
 * Why the OS refuses `host:port`, e.g. "EADDRINUSE (address already in use)". uWS reports a
 * failed listen with nothing but `false`, so the bind is tried again with node:net, which
 * keeps the errno. Its bind is exclusive like the relay's, so it fails the same way; should
 * the cause have gone meanwhile (the port freed), that is what it says.
 */
export function whyCannotListen(host: string, port: number): Promise<string> {
  return new Promise((resolve) => {
    const probe = createServer()
    probe.once('error', (error: NodeJS.ErrnoException) => {
      const description = error.errno === undefined ? undefined : getSystemErrorMap().get(error.errno)?.[1]
      resolve(description === undefined ? (error.code ?? error.message) : `${error.code} (${description})`)
    })
    probe.once('listening', () => probe.close(() => resolve('unknown: the address was free when tried again')))
    // An empty host is every interface, IPv4 and IPv6, as for uWS.
    probe.listen({ host: host === '' ? undefined : host, port, exclusive: true })
  })
}
