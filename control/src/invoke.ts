// Invoking a deployed function: one HTTP request to the application's Service, through the API
// server's service proxy (or straight to the Service when the control plane runs in the
// cluster), answered as the envelope of control-plane.md §2: always 200 for the caller, the
// function's own status inside. Limits of §8: a request body of at most 1 MiB, at most 1 MiB
// of the answer kept (`truncated` says when it was cut), and a timeout reported inside.
import type { IncomingMessage } from 'node:http'
import http from 'node:http'
import { performance } from 'node:perf_hooks'
import type { Static } from 'typebox'
import { InvalidInputError, NotFoundError, TooLargeError, UnavailableError } from './errors.js'
import type { Kube } from './kube.js'
import { clusterError } from './kube.js'
import { formatDuration } from '../../common/src/duration.js'
import type { InvokeRequest, InvokeResult } from './schemas.js'

export type InvokeRequestT = Static<typeof InvokeRequest>
export type InvokeResultT = Static<typeof InvokeResult>

export const MAX_INVOKE_BODY_BYTES = 1024 * 1024
export const MAX_INVOKE_RESPONSE_BYTES = 1024 * 1024

// Hop-by-hop headers (RFC 9110 §7.6.1) belong to one connection, not to the request. The
// caller's Authorization is for this API, never for the function; Impersonate-* would be read
// by the API server itself; Host and Content-Length are set for the new request.
const NOT_FORWARDED = new Set(['connection', 'keep-alive', 'proxy-connection', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer',
  'transfer-encoding', 'upgrade', 'authorization', 'host', 'content-length'])
const NOT_RETURNED = new Set(['connection', 'keep-alive', 'proxy-connection', 'proxy-authenticate', 'te', 'trailer', 'transfer-encoding', 'upgrade'])

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/

/** True when `path` (with its query) is one the function's route takes, as Spin matches routes. */
export function routeTakes (route: string, path: string): boolean {
  const bare = path.split('?')[0] as string
  if (route === '/...') return true
  if (route.endsWith('/...')) {
    const prefix = route.slice(0, -4)
    return bare === prefix || bare.startsWith(prefix + '/')
  }
  return bare === route
}

function requestBody (request: InvokeRequestT): Buffer {
  const text = request.body ?? ''
  if (request.bodyIsBase64 === true) {
    if (!BASE64.test(text)) throw new InvalidInputError('body: expected base64, as bodyIsBase64 says')
    return Buffer.from(text, 'base64')
  }
  return Buffer.from(text, 'utf8')
}

function forwardedHeaders (headers: Record<string, string[]> = {}): Record<string, string[]> {
  const lower = Object.fromEntries(Object.entries(headers).map(([name, values]) => [name.toLowerCase(), values]))
  const named = new Set((lower.connection ?? []).flatMap((value) => value.split(',').map((name) => name.trim().toLowerCase())))
  const out: Record<string, string[]> = {}
  for (const [name, values] of Object.entries(lower)) {
    if (NOT_FORWARDED.has(name) || named.has(name) || name.startsWith('impersonate-')) continue
    if (!/^[!#$%&'*+.^_`|~0-9a-z-]+$/.test(name)) throw new InvalidInputError(`headers: ${JSON.stringify(name)} is not a header name`)
    if (values.some((value) => /[\r\n\0]/.test(value))) throw new InvalidInputError(`headers.${name}: a value holds a line break or NUL`)
    out[name] = values
  }
  return out
}

const TEXT_TYPES = /^(text\/|application\/(json|xml|javascript|ecmascript|x-www-form-urlencoded|graphql)\b|[^;]*\+(json|xml)\b)/i

function encodeBody (body: Buffer, contentType: string | undefined): { body: string; bodyIsBase64: boolean } {
  if (contentType !== undefined && TEXT_TYPES.test(contentType.trim())) {
    const text = new TextDecoder('utf-8', { fatal: true })
    try {
      return { body: text.decode(body), bodyIsBase64: false }
    } catch {
      // not UTF-8 after all
    }
  }
  return { body: body.toString('base64'), bodyIsBase64: true }
}

export type InvokeTarget = { kube: Kube; serviceName: string; timeoutMs: number }

/** An invoke request checked (400, 413) and ready to send. */
export type PreparedInvoke = { method: string; path: string; headers: Record<string, string[]>; body: Buffer }

export function prepareInvoke (request: InvokeRequestT, route: string): PreparedInvoke {
  const body = requestBody(request)
  if (body.length > MAX_INVOKE_BODY_BYTES) throw new TooLargeError(`invoke body too large: at most ${MAX_INVOKE_BODY_BYTES} bytes`)
  if (!routeTakes(route, request.path)) throw new InvalidInputError(`path ${request.path.split('?')[0]} is not one this function's route ${route} takes`)
  const headers = forwardedHeaders(request.headers)
  headers['content-length'] = [String(body.length)]
  return { method: request.method, path: request.path, headers, body }
}

export async function invoke (target: InvokeTarget, request: PreparedInvoke): Promise<InvokeResultT> {
  const { headers, body } = request

  const { kube } = target
  const started = performance.now()
  const abort = new AbortController()
  const timer = setTimeout(() => abort.abort(), target.timeoutMs)
  const durationMs = (): number => Math.round((performance.now() - started) * 10) / 10
  const timedOut = (): InvokeResultT => ({
    status: 504,
    headers: {},
    body: `the function did not answer within ${formatDuration(target.timeoutMs)}`,
    bodyIsBase64: false,
    truncated: false,
    durationMs: durationMs(),
  })
  try {
    let answer: IncomingMessage
    try {
      answer = kube.inCluster
        ? await direct(`${kube.serviceUrl(target.serviceName)}${request.path}`, request.method, headers, body, abort.signal)
        : await kube.request(request.method, `/api/v1/namespaces/${kube.namespace}/services/${target.serviceName}/proxy${request.path}`, { headers, body, signal: abort.signal })
    } catch (error) {
      if (abort.signal.aborted) return timedOut()
      if (kube.inCluster) throw new UnavailableError('application unreachable')
      throw clusterError(error, `${proxyVerb(request.method)} services/proxy`)
    }
    let captured: { bytes: Buffer; truncated: boolean }
    try {
      captured = await capture(answer, MAX_INVOKE_RESPONSE_BYTES)
    } catch {
      if (abort.signal.aborted) return timedOut()
      throw new UnavailableError('application unreachable: the answer broke off')
    }
    const status = answer.statusCode ?? 502
    if (!kube.inCluster) refuseApiServerStatus(status, answer.headers['content-type'], captured.bytes, request.method)
    const responseHeaders: Record<string, string[]> = {}
    for (let i = 0; i < answer.rawHeaders.length; i += 2) {
      const name = (answer.rawHeaders[i] as string).toLowerCase()
      if (NOT_RETURNED.has(name)) continue
      ;(responseHeaders[name] ??= []).push(answer.rawHeaders[i + 1] as string)
    }
    return { status, headers: responseHeaders, ...encodeBody(captured.bytes, answer.headers['content-type']), truncated: captured.truncated, durationMs: durationMs() }
  } finally {
    clearTimeout(timer)
  }
}

function direct (url: string, method: string, headers: Record<string, string[]>, body: Buffer, signal: AbortSignal): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const request = http.request(url, { method, headers, signal }, resolve)
    request.on('error', reject)
    request.end(body)
  })
}

/** Read up to `limit` bytes of the answer; past it, stop reading and drop the connection. */
function capture (answer: IncomingMessage, limit: number): Promise<{ bytes: Buffer; truncated: boolean }> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    answer.on('data', (chunk: Buffer) => {
      const room = limit - size
      if (chunk.length > room) {
        chunks.push(chunk.subarray(0, room))
        // Settled before destroy(), which reports itself as an abort.
        resolve({ bytes: Buffer.concat(chunks), truncated: true })
        answer.destroy()
        return
      }
      chunks.push(chunk)
      size += chunk.length
    })
    answer.on('end', () => resolve({ bytes: Buffer.concat(chunks), truncated: false }))
    answer.on('error', reject)
    answer.on('aborted', () => reject(new Error('aborted')))
  })
}

const PROXY_VERBS: Record<string, string> = { GET: 'get', HEAD: 'get', POST: 'create', PUT: 'update', PATCH: 'patch', DELETE: 'delete' }

export function proxyVerb (method: string): string {
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
