// The containers' HEALTHCHECK: GET /healthz on the port a listen address names (on loopback
// when it names every interface), over TLS when asked. Exits 0 when healthy, 1 otherwise.
import { request as httpRequest } from 'node:http'
import { request as httpsRequest } from 'node:https'
import { parseListenAddress } from './config/settings.js'

const TIMEOUT_MS = 3_000

export function probeHealth(address: string, opts: { tls: boolean }): void {
  const { host, port } = parseListenAddress(address)
  const target = host === '' || host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host
  const request = opts.tls ? httpsRequest : httpRequest
  // A certificate names the public host, not loopback: this probe checks liveness, not identity.
  const req = request(
    { host: target, port, path: '/healthz', timeout: TIMEOUT_MS, rejectUnauthorized: false },
    (res) => {
      res.resume()
      process.exit(res.statusCode === 200 ? 0 : 1)
    },
  )
  req.on('timeout', () => req.destroy(new Error('timeout')))
  req.on('error', () => process.exit(1))
  req.end()
}
