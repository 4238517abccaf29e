// An invoke in the cluster: to the application's Service through the API server's service
// proxy, or straight to the Service when the control plane runs in the cluster. Through the
// proxy the API server may answer for itself (a v1 Status): those answers become ours.
import { NotFoundError, UnavailableError } from '../../../common/src/errors.js'
import type { Carrier } from '../runtime/send-invoke.js'
import { direct } from '../runtime/send-invoke.js'
import type { Kube } from './kube.js'
import { clusterError } from './kube.js'

/** The carrier of one request with `method` to the Service `serviceName`. */
export function serviceCarrier (kube: Kube, serviceName: string, method: string): Carrier {
  if (kube.inCluster) return direct(kube.serviceUrl(serviceName))
  const proxy = `/api/v1/namespaces/${encodeURIComponent(kube.namespace)}/services/${encodeURIComponent(serviceName)}/proxy`
  return {
    send: (request, signal) => kube.request(request.method, proxy + request.path, { headers: request.headers, body: request.body, signal, within: proxy + '/' }),
    unanswered: (error) => clusterError(error, `${proxyVerb(method)} services/proxy`),
    check: (status, contentType, body) => refuseApiServerStatus(status, contentType, body, method),
  }
}

const PROXY_VERBS: Record<string, string> = { GET: 'get', HEAD: 'get', POST: 'create', PUT: 'update', PATCH: 'patch', DELETE: 'delete' }

function proxyVerb (method: string): string {
  return PROXY_VERBS[method.toUpperCase()] ?? method.toLowerCase()
}

/**
 * The API server answers for itself, with a v1 Status, when it cannot proxy: the Service is
 * gone (404), no pod is ready (503), or the control plane may not proxy (403). Those are not
 * the function's answers and become ours.
 */
function refuseApiServerStatus (status: number, contentType: string | undefined, body: Buffer, method: string): void {
  if (status < 400 || contentType?.startsWith('application/json') !== true || body.length > 64 * 1024) return
  let parsed: { kind?: unknown; apiVersion?: unknown; message?: unknown; details?: { kind?: unknown } }
  try {
    parsed = JSON.parse(body.toString('utf8')) as typeof parsed
  } catch {
    return
  }
  if (parsed.kind !== 'Status' || parsed.apiVersion !== 'v1') return
  if (status === 404 && parsed.details?.kind === 'services') throw new NotFoundError('application is not deployed: its Service does not exist')
  if (status === 401 || status === 403) throw clusterError({ statusCode: status }, `${proxyVerb(method)} services/proxy`)
  if (status >= 500) {
    const noEndpoints = typeof parsed.message === 'string' && parsed.message.startsWith('no endpoints available')
    throw new UnavailableError(`application unreachable: ${noEndpoints ? 'no pod of it is ready' : 'the cluster could not reach it'}`)
  }
}
