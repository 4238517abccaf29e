// Invoking a deployed function: one HTTP request to the application's Service, through the API
// server's service proxy (or straight to the Service when the control plane runs in the
// cluster), answered as the envelope of control-plane.md §2: always 200 for the caller, the
// function's own status inside. Limits of §8: a request body of at most 1 MiB, at most 1 MiB
// of the answer kept (`truncated` says when it was cut), and a timeout reported inside.
import type { IncomingMessage } from 'node:http'
import http from 'node:http'
import { performance } from 'node:perf_hooks'
import { urlToHttpOptions } from 'node:url'
import type { Static } from 'typebox'
import { ApiError, InvalidInputError, NotFoundError, TooLargeError, UnavailableError } from '../errors.js'
import { invokeTarget, parseInvokePath, routeTakes } from './invoke-path.js'
import type { Kube } from '../cluster/kube.js'
import { clusterError, sendablePath } from '../cluster/kube.js'
import { formatDuration } from '../../../common/src/config/duration.js'
import type { InvokeRequest, InvokeResult } from '../model/resources.js'

export type InvokeRequestT = Static<typeof InvokeRequest>
export type InvokeResultT = Static<typeof InvokeResult>

export const MAX_INVOKE_BODY_BYTES = 1024 * 1024
const MAX_INVOKE_RESPONSE_BYTES = 1024 * 1024

// Hop-by-hop headers (RFC 9110 §7.6.1) belong to one connection, not to the request. The
// caller's Authorization is for this API, never for the function; Impersonate-* would be read
// by the API server itself; Host and Content-Length are set for the new request.
const NOT_FORWARDED = new Set(['connection', 'keep-alive', 'proxy-connection', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer',
  'transfer-encoding', 'upgrade', 'authorization', 'host', 'content-length'])
const NOT_RETURNED = new Set(['connection', 'keep-alive', 'proxy-connection', 'proxy-authenticate', 'te', 'trailer', 'transfer-encoding', 'upgrade'])

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/

function requestBody (request: InvokeRequestT): Buffer {
  const text = request.body ?? ''
  const base64 = request.bodyIsBase64 === true
  if (base64 && !BASE64.test(text)) throw new InvalidInputError('body: expected base64, as bodyIsBase64 says')
  const body = Buffer.from(text, base64 ? 'base64' : 'utf8')
  // The route's JSON limit leaves room for base64; this is the limit on what the function gets.
  if (body.length > MAX_INVOKE_BODY_BYTES) {
    throw new TooLargeError(`invoke body too large: ${body.length} bytes (${base64 ? 'after base64 decoding' : 'UTF-8'}), at most ${MAX_INVOKE_BODY_BYTES}`)
  }
  return body
}

// CONNECT asks the server for a tunnel: Node's client answers it with a 'connect' event, never
// a response. TRACE loops the request back as the last hop received it, with what the API
// server's proxy added. Neither is a request to a function.
const REFUSED_METHODS: Record<string, string> = {
  CONNECT: 'CONNECT asks for a tunnel, not an answer; it is not sent',
  TRACE: 'TRACE would echo back what the API server adds to the request; it is not sent',
}

function requestMethod (method: string): string {
  // Node's client sends methods upper-cased; check the one that would go out.
  const upper = method.toUpperCase()
  const refusal = REFUSED_METHODS[upper]
  if (refusal !== undefined) throw new InvalidInputError(`method: ${refusal}`)
  return upper
}

// RFC 9110 §5.5 field values: visible ASCII, space and tab. obs-text (bytes 0x80-0xFF) is
// refused too: a JavaScript string would go out as Latin-1, which no caller means.
const FIELD_VALUE = /^[\t\x20-\x7e]*$/

function forwardedHeaders (headers: Record<string, string[]> = {}): Record<string, string[]> {
  const lower: Record<string, string[]> = {}
  for (const [name, values] of Object.entries(headers)) (lower[name.toLowerCase()] ??= []).push(...values)
  const named = new Set((lower.connection ?? []).flatMap((value) => value.split(',').map((name) => name.trim().toLowerCase())))
  const out: Record<string, string[]> = {}
  for (const [name, values] of Object.entries(lower)) {
    if (NOT_FORWARDED.has(name) || named.has(name) || name.startsWith('impersonate-')) continue
    if (!/^[!#$%&'*+.^_`|~0-9a-z-]+$/.test(name)) throw new InvalidInputError(`headers: ${JSON.stringify(name)} is not a header name`)
    if (!values.every((value) => FIELD_VALUE.test(value))) throw new InvalidInputError(`headers.${name}: a value holds a character outside visible ASCII, space and tab`)
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

/** The application's Service through the cluster, or a URL that answers for it directly (a local deployment). */
type ServiceTarget = { kube: Kube; serviceName: string; timeoutMs: number }
export type InvokeTarget = ServiceTarget | { url: string; timeoutMs: number }

/** Where to send the request straight to, or null when it goes through the API server's service proxy. */
function directUrlOf (target: InvokeTarget): string | null {
  if ('url' in target) return target.url
  return target.kube.inCluster ? target.kube.serviceUrl(target.serviceName) : null
}

/** An invoke request checked (400, 413) and ready to send; `path` is rebuilt from checked parts. */
export type PreparedInvoke = { method: string; path: string; headers: Record<string, string[]>; body: Buffer }

export function prepareInvoke (request: InvokeRequestT, route: string): PreparedInvoke {
  const body = requestBody(request)
  const path = parseInvokePath(request.path)
  const target = invokeTarget(path)
  if (!routeTakes(route, path)) throw new InvalidInputError(`path ${target.split('?')[0] as string} is not one this function's route ${route} takes`)
  const headers = forwardedHeaders(request.headers)
  headers['content-length'] = [String(body.length)]
  return { method: requestMethod(request.method), path: target, headers, body }
}

export async function invoke (target: InvokeTarget, request: PreparedInvoke): Promise<InvokeResultT> {
  const { headers, body } = request
  const directUrl = directUrlOf(target)
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
      if (directUrl !== null) {
        answer = await direct(directUrl, request, abort.signal)
      } else {
        const { kube, serviceName } = target as ServiceTarget
        const proxy = `/api/v1/namespaces/${encodeURIComponent(kube.namespace)}/services/${encodeURIComponent(serviceName)}/proxy`
        answer = await kube.request(request.method, proxy + request.path, { headers, body, signal: abort.signal, within: proxy + '/' })
      }
    } catch (error) {
      if (error instanceof ApiError) throw error
      if (abort.signal.aborted) return timedOut()
      if (directUrl !== null) throw new UnavailableError('application unreachable')
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
    if (directUrl === null) refuseApiServerStatus(status, answer.headers['content-type'], captured.bytes, request.method)
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

/**
 * Straight to the Service: its scheme, host and port from `serviceUrl` alone, the path sent
 * as it is (no URL parsing of service URL and path joined, which could resolve or re-read it).
 */
function direct (serviceUrl: string, request: PreparedInvoke, signal: AbortSignal): Promise<IncomingMessage> {
  const base = urlToHttpOptions(new URL(serviceUrl))
  const path = sendablePath(request.path, '/')
  return new Promise((resolve, reject) => {
    const outgoing = http.request({ protocol: base.protocol, hostname: base.hostname, port: base.port, path, method: request.method, headers: request.headers, signal }, resolve)
    outgoing.on('error', reject)
    outgoing.end(request.body)
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
