// One invoke sent to a deployed application and its answer read into the envelope of
// control-plane.md §2, whatever carries it (a loopback URL, a Service, the API server's
// proxy): at most 1 MiB of the answer kept (`truncated` says when it was cut), the timeout
// reported inside as a 504, hop-by-hop headers dropped.
import type { IncomingMessage } from 'node:http'
import http from 'node:http'
import { performance } from 'node:perf_hooks'
import { urlToHttpOptions } from 'node:url'
import { formatDuration } from '@session-relay/common/config/duration'
import { HttpError, InvalidInputError, UnavailableError } from '@session-relay/common/errors'
import type { InvokeResultT } from '../model/resources.js'
import type { PreparedInvoke } from './runtime.js'

const MAX_INVOKE_RESPONSE_BYTES = 1024 * 1024

const NOT_RETURNED = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
])

const TEXT_TYPES =
  /^(text\/|application\/(json|xml|javascript|ecmascript|x-www-form-urlencoded|graphql)\b|[^;]*\+(json|xml)\b)/i

export type Carrier = {
  send: (request: PreparedInvoke, signal: AbortSignal) => Promise<IncomingMessage>
  /** The error for a request that got no answer (not a timeout). */
  unanswered: (error: unknown) => HttpError
  /** Throws when the answer is the carrier's own refusal rather than the application's. */
  check?: (status: number, contentType: string | undefined, body: Buffer) => void | Promise<void>
}

export async function sendInvoke(carrier: Carrier, request: PreparedInvoke, timeoutMs: number): Promise<InvokeResultT> {
  const started = performance.now()
  const abort = new AbortController()
  const timer = setTimeout(() => abort.abort(), timeoutMs)
  const durationMs = (): number => Math.round((performance.now() - started) * 10) / 10
  const timedOut = (): InvokeResultT => ({
    status: 504,
    headers: {},
    body: `the function did not answer within ${formatDuration(timeoutMs)}`,
    bodyIsBase64: false,
    truncated: false,
    durationMs: durationMs(),
  })
  try {
    let answer: IncomingMessage
    try {
      answer = await carrier.send(request, abort.signal)
    } catch (error) {
      if (error instanceof HttpError) throw error
      if (abort.signal.aborted) return timedOut()
      throw carrier.unanswered(error)
    }
    let captured: { bytes: Buffer; truncated: boolean }
    try {
      captured = await capture(answer, MAX_INVOKE_RESPONSE_BYTES)
    } catch {
      if (abort.signal.aborted) return timedOut()
      throw new UnavailableError('application unreachable: the answer broke off')
    }
    const status = answer.statusCode ?? 502
    await carrier.check?.(status, answer.headers['content-type'], captured.bytes)
    const responseHeaders: Record<string, string[]> = {}
    for (let i = 0; i < answer.rawHeaders.length; i += 2) {
      const name = (answer.rawHeaders[i] as string).toLowerCase()
      if (NOT_RETURNED.has(name)) continue
      ;(responseHeaders[name] ??= []).push(answer.rawHeaders[i + 1] as string)
    }
    return {
      status,
      headers: responseHeaders,
      ...encodeBody(captured.bytes, answer.headers['content-type']),
      truncated: captured.truncated,
      durationMs: durationMs(),
    }
  } finally {
    clearTimeout(timer)
  }
}

/**
 * A carrier straight to `baseUrl`: its scheme, host and port from the URL alone, the path sent
 * as it is (no URL parsing of base and path joined, which could resolve or re-read it). With
 * `agent`, the connections kept alive for what answers there (local/connections.ts); without,
 * a connection of its own per request.
 */
export function direct(baseUrl: string, agent?: http.Agent): Carrier {
  const base = urlToHttpOptions(new URL(baseUrl))
  return {
    send: (request, signal) =>
      new Promise((resolve, reject) => {
        const path = sendablePath(request.path, '/')
        // Never the global agent: a connection it kept alive may belong to whatever a redeploy or
        // a restart replaced at the same address, and its reset would be taken for the answer.
        const outgoing = http.request(
          {
            protocol: base.protocol,
            hostname: base.hostname,
            port: base.port,
            path,
            method: request.method,
            headers: request.headers,
            signal,
            agent: agent ?? false,
          },
          resolve,
        )
        outgoing.on('error', reject)
        outgoing.end(request.body)
      }),
    unanswered: () => new UnavailableError('application unreachable'),
  }
}

/**
 * `path` (with its query) as it may go out: unchanged by the URL parsing of whatever receives
 * it (no dot segment to resolve, no `\` to read as `/`, no authority) and still under
 * `within`. The callers build their paths from checked parts; this refuses (400) when one
 * slipped through all the same, rather than send a request nobody meant.
 */
export function sendablePath(path: string, within: string): string {
  let resolved: URL
  try {
    resolved = new URL(path, 'http://resolver.invalid')
  } catch {
    throw new InvalidInputError('path: refused, it does not parse as a URL path')
  }
  const [pathPart = ''] = path.split('?')
  if (
    !path.startsWith('/') ||
    path.includes('#') ||
    resolved.host !== 'resolver.invalid' ||
    resolved.pathname !== pathPart ||
    !resolved.pathname.startsWith(within)
  ) {
    throw new InvalidInputError('path: refused, it would not reach the function unchanged')
  }
  return path
}

function encodeBody(body: Buffer, contentType: string | undefined): { body: string; bodyIsBase64: boolean } {
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

/** Read up to `limit` bytes of the answer; past it, stop reading and drop the connection. */
function capture(answer: IncomingMessage, limit: number): Promise<{ bytes: Buffer; truncated: boolean }> {
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
