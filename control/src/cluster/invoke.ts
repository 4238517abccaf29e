// An invoke in the cluster: to the application's Service through the API server's service
// proxy, or straight to the Service when the control plane runs in the cluster. Through the
// proxy the API server may answer for itself (a v1 Status): those answers become ours. A HEAD's
// answer has no body to read that Status from, so for one that may be the API server's "no
// endpoints" the EndpointSlices the proxy chose from are read to tell. The proxy carries only
// the methods Kubernetes names a verb for: any other (OPTIONS, an extension method) is
// authorized as the empty verb, which no Role grants, so it is refused before it is sent.
import type { HttpError } from '@session-relay/common/errors'
import { InvalidInputError, NotFoundError, UnavailableError } from '@session-relay/common/errors'
import type { Carrier } from '../runtime/send-invoke.js'
import { direct } from '../runtime/send-invoke.js'
import type { Kube } from './kube.js'
import { clusterError, statusOf } from './kube.js'

/** The carrier of one request with `method` to the Service `serviceName`. */
export function serviceCarrier(kube: Kube, serviceName: string, method: string): Carrier {
  if (kube.inCluster) return direct(kube.serviceUrl(serviceName))
  if (PROXY_VERBS[method.toUpperCase()] === undefined)
    throw new InvalidInputError(
      `method: ${method.toUpperCase()} cannot go through the API server's service proxy (only GET, HEAD, POST, PUT, PATCH and DELETE); it is not sent`,
    )
  const proxy = `/api/v1/namespaces/${encodeURIComponent(kube.namespace)}/services/${encodeURIComponent(serviceName)}/proxy`
  return {
    send: (request, signal) =>
      kube.request(request.method, proxy + request.path, {
        headers: request.headers,
        body: request.body,
        signal,
        within: proxy + '/',
      }),
    unanswered: (error) => clusterError(error, `${proxyVerb(method)} services/proxy`),
    check: async (status, contentType, body) => {
      const noEndpoints =
        refuseApiServerStatus(status, contentType, body, method) ||
        (method.toUpperCase() === 'HEAD' &&
          mayBeProxyFailure(status, contentType, body) &&
          !(await hasReadyEndpoint(kube, serviceName)))
      if (noEndpoints) throw await withoutEndpoints(kube, serviceName)
    },
  }
}

const NO_POD_READY = 'application unreachable: no pod of it is ready'

const PROXY_VERBS: Record<string, string> = {
  GET: 'get',
  HEAD: 'get',
  POST: 'create',
  PUT: 'update',
  PATCH: 'patch',
  DELETE: 'delete',
}

function proxyVerb(method: string): string {
  return PROXY_VERBS[method.toUpperCase()] as string
}

/**
 * The API server answers for itself, with a v1 Status, when it cannot proxy: the Service is
 * gone (404), no endpoint (503), or the control plane may not proxy (403). Those are not the
 * function's answers and become ours; "no endpoints" comes back true, for the caller to say why.
 */
function refuseApiServerStatus(status: number, contentType: string | undefined, body: Buffer, method: string): boolean {
  if (status < 400 || contentType?.startsWith('application/json') !== true || body.length > 64 * 1024) return false
  let parsed: { kind?: unknown; apiVersion?: unknown; message?: unknown; details?: { kind?: unknown } }
  try {
    parsed = JSON.parse(body.toString('utf8')) as typeof parsed
  } catch {
    return false
  }
  if (parsed.kind !== 'Status' || parsed.apiVersion !== 'v1') return false
  if (status === 404 && parsed.details?.kind === 'services') throw notDeployed()
  if (status === 401 || status === 403)
    throw clusterError({ statusCode: status }, `${proxyVerb(method)} services/proxy`)
  if (status < 500) return false
  if (typeof parsed.message === 'string' && parsed.message.startsWith('no endpoints available')) return true
  throw new UnavailableError('application unreachable: the cluster could not reach it')
}

const notDeployed = (): NotFoundError => new NotFoundError('application is not deployed: its Service does not exist')

/**
 * Why the proxy found no endpoint. It never reads the Service (it picks from the EndpointSlices
 * named after it), so a Service that is gone says "no endpoints" too: reading it tells.
 */
async function withoutEndpoints(kube: Kube, serviceName: string): Promise<HttpError> {
  try {
    await kube.core.readNamespacedService({ namespace: kube.namespace, name: serviceName })
  } catch (error) {
    if (statusOf(error) === 404) return notDeployed()
  }
  return new UnavailableError(NO_POD_READY)
}

/** An answer without a body that the API server may have given itself: a 5xx it types as JSON. */
function mayBeProxyFailure(status: number, contentType: string | undefined, body: Buffer): boolean {
  return status >= 500 && body.length === 0 && contentType?.startsWith('application/json') === true
}

/**
 * Whether the service proxy has a pod to send to, as the API server picks one: a ready endpoint
 * that targets a pod, under the Service's unnamed port (the proxy path names none), in one of
 * the Service's EndpointSlices.
 */
async function hasReadyEndpoint(kube: Kube, serviceName: string): Promise<boolean> {
  try {
    const slices = await kube.discovery.listNamespacedEndpointSlice({
      namespace: kube.namespace,
      labelSelector: `kubernetes.io/service-name=${serviceName}`,
    })
    return slices.items.some(
      (slice) =>
        slice.ports?.some((port) => port.name === '' && port.port !== undefined) === true &&
        (slice.endpoints ?? []).some(
          (endpoint) => endpoint.conditions?.ready !== false && endpoint.targetRef !== undefined,
        ),
    )
  } catch (error) {
    throw clusterError(error, 'list discovery.k8s.io endpointslices')
  }
}
