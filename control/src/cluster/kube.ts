// The connection to the Kubernetes API: where its configuration comes from, the clients the
// other modules use, a raw request for the two streaming calls the generated clients cannot
// stream (pod logs and the service proxy), and the one mapping of cluster failures to answers
// a caller may see: no token, no server address, only what went wrong and what to grant.
import type { IncomingMessage } from 'node:http'
import http from 'node:http'
import https from 'node:https'
import { urlToHttpOptions } from 'node:url'
import {
  ApiException,
  AppsV1Api,
  BatchV1Api,
  CoreV1Api,
  CustomObjectsApi,
  DiscoveryV1Api,
  KubeConfig,
  Watch,
} from '@kubernetes/client-node'
import type { KubeSource } from './kube-source.js'
import type { ClusterSettings } from './settings.js'
import { HttpError, NotFoundError, UnavailableError } from '@session-relay/common/errors'
import { ConfigError } from '@session-relay/common/config/settings'
import { sendablePath } from '../runtime/send-invoke.js'

export type Kube = {
  namespace: string
  /** Running in a pod of the cluster (in-cluster configuration): invoke goes straight to the Service. */
  inCluster: boolean
  /** The in-cluster base URL of a Service of the namespace. */
  serviceUrl(name: string): string
  batch: BatchV1Api
  core: CoreV1Api
  apps: AppsV1Api
  custom: CustomObjectsApi
  discovery: DiscoveryV1Api
  watch: Watch
  /** A request to the API server, answered as a stream; `path` starts with "/". */
  request(method: string, path: string, opts?: RawRequestOptions): Promise<IncomingMessage>
}

type RawRequestOptions = {
  headers?: Record<string, string | string[]>
  body?: Buffer
  signal?: AbortSignal
  /** A prefix `path` must stay under (the service proxy of one Service); refused (400) otherwise. */
  within?: string
}

/** The cluster client, from where `kubeSource` found its configuration. */
export function connectKube(config: Pick<ClusterSettings, 'namespace'>, source: KubeSource): Kube {
  const kc = new KubeConfig()
  const inCluster = source.kind === 'in-cluster'
  try {
    if (source.kind === 'file') kc.loadFromFile(source.path)
    else if (inCluster) kc.loadFromCluster()
    else kc.loadFromDefault()
  } catch (error) {
    throw new ConfigError(`cannot read the kubeconfig: ${(error as Error).message}`)
  }
  const cluster = kc.getCurrentCluster()
  if (cluster === null) throw new ConfigError('the kubeconfig has no current cluster')
  // The server's scheme, host, port and path prefix (some clusters are served under one), fixed
  // here once: a request's path is appended as text, never resolved against the server URL.
  const server = urlToHttpOptions(new URL(cluster.server))
  const serverPrefix = ((server.path ?? '').split('?')[0] as string).replace(/\/+$/, '')
  return {
    namespace: config.namespace,
    inCluster,
    serviceUrl: (name) => `http://${name}.${config.namespace}.svc.cluster.local`,
    batch: kc.makeApiClient(BatchV1Api),
    core: kc.makeApiClient(CoreV1Api),
    apps: kc.makeApiClient(AppsV1Api),
    custom: kc.makeApiClient(CustomObjectsApi),
    discovery: kc.makeApiClient(DiscoveryV1Api),
    watch: new Watch(kc),
    async request(method, path, opts = {}) {
      const sent = sendablePath(serverPrefix + path, serverPrefix + (opts.within ?? '/'))
      const options: https.RequestOptions = { method, headers: { ...opts.headers } }
      await kc.applyToHTTPSOptions(options)
      const send = server.protocol === 'https:' ? https.request : http.request
      const target = { protocol: server.protocol, hostname: server.hostname, port: server.port, path: sent }
      return new Promise((resolve, reject) => {
        const request = send(
          { ...options, ...target, ...(opts.signal !== undefined ? { signal: opts.signal } : {}) },
          resolve,
        )
        request.on('error', reject)
        request.end(opts.body)
      })
    },
  }
}

/** What a 404 from the cluster means for the caller of one call. */
export type NotFoundMeaning = { notFound?: string; missingCrd?: boolean }

/**
 * The answer for a failed cluster call. `action` names what was attempted in RBAC words
 * ("create batch jobs"), so a 403 says which permission the service account lacks.
 */
export function clusterError(error: unknown, action: string, meaning: NotFoundMeaning = {}): HttpError {
  if (error instanceof HttpError) return error
  const status = statusOf(error)
  if (status === null) {
    if (isNetworkError(error)) return new UnavailableError('cluster unreachable')
    throw error
  }
  if (status === 401) return new UnavailableError("cluster refused the control plane's credentials")
  if (status === 403) return new UnavailableError(`cluster permission missing: the control plane may not ${action}`)
  if (status === 404) {
    if (meaning.missingCrd === true && isMissingResourceType(error)) return spinAppCrdMissing()
    if (meaning.notFound !== undefined) return new NotFoundError(meaning.notFound)
  }
  if (status === 413) return new HttpError(413, 'too large for the cluster')
  return new UnavailableError(`cluster error: ${action} answered ${status}`)
}

export function spinAppCrdMissing(): UnavailableError {
  return new UnavailableError(
    'the SpinApp custom resource definition (core.spinkube.dev/v1alpha1) is not installed in the cluster',
  )
}

/** The HTTP status of a failed cluster call, or null when it never got an answer. */
export function statusOf(error: unknown): number | null {
  if (error instanceof ApiException) return error.code
  const code = (error as { statusCode?: unknown } | null)?.statusCode
  return typeof code === 'number' ? code : null
}

/** The Kubernetes Status body of a failed call, when it has one. */
export function statusBody(
  error: unknown,
): { reason?: string; message?: string; details?: { name?: string; kind?: string } } | null {
  if (!(error instanceof ApiException)) return null
  let body: unknown = error.body
  if (typeof body === 'string') {
    try {
      body = JSON.parse(body)
    } catch {
      return null
    }
  }
  return typeof body === 'object' && body !== null ? body : null
}

// The API server answers 404 without details for a path of a resource type it does not serve,
// and with details.name for an object that does not exist.
function isMissingResourceType(error: unknown): boolean {
  const body = statusBody(error)
  return body?.details?.name === undefined
}

function isNetworkError(error: unknown): boolean {
  const e = error as { code?: unknown; name?: unknown; type?: unknown; cause?: unknown } | null
  if (e === null || typeof e !== 'object') return false
  if (typeof e.code === 'string' && /^(E[A-Z]+|UND_ERR)/.test(e.code)) return true
  if (e.name === 'FetchError' || e.type === 'system') return true
  return e.cause !== undefined && isNetworkError(e.cause)
}

/** Log fields for a cluster failure: the error's name, code and status, never its request. */
export function clusterFailure(error: unknown): Record<string, unknown> {
  const e = error as { name?: unknown; code?: unknown } | null
  return { errorName: e?.name, errorCode: e?.code, status: statusOf(error), reason: statusBody(error)?.reason }
}
