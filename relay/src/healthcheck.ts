// The container's HEALTHCHECK: GET /healthz on the port RELAY_ADDR names, over TLS when the
// relay serves TLS. Exit 0 when healthy, 1 otherwise.
import { request as httpRequest } from 'node:http'
import { request as httpsRequest } from 'node:https'
import { parseListenAddress } from '../../common/src/settings.js'

const TIMEOUT_MS = 3_000

const { host, port } = parseListenAddress(process.env.RELAY_ADDR || ':8080')
const tls = (process.env.RELAY_TLS_CERT ?? '') !== ''
const target = host === '' || host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host
const request = tls ? httpsRequest : httpRequest
// The certificate names the public host, not loopback: this probe checks liveness, not identity.
const req = request({ host: target, port, path: '/healthz', timeout: TIMEOUT_MS, rejectUnauthorized: false }, (res) => {
  res.resume()
  process.exit(res.statusCode === 200 ? 0 : 1)
})
req.on('timeout', () => req.destroy(new Error('timeout')))
req.on('error', () => process.exit(1))
req.end()
