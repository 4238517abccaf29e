// An invoke request checked before anything is sent (control-plane.md §2 and §8): a body of at
// most 1 MiB, a path the function's route takes, headers a function may get, a method that asks
// for an answer. Sending it is the runtime's (runtime/send-invoke.ts and each implementation).
import type { InvokeRequestT } from '../model/resources.js'
import type { PreparedInvoke } from '../runtime/runtime.js'
import { InvalidInputError, TooLargeError } from '@session-relay/common/errors'
import { invokeTarget, parseInvokePath, routeTakes } from './invoke-path.js'

export const MAX_INVOKE_BODY_BYTES = 1024 * 1024

// Hop-by-hop headers (RFC 9110 §7.6.1) belong to one connection, not to the request. The
// caller's Authorization is for this API, never for the function; Impersonate-* would be read
// by the API server itself; Host and Content-Length are set for the new request.
const NOT_FORWARDED = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'authorization',
  'host',
  'content-length',
])

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/

function requestBody(request: InvokeRequestT): Buffer {
  const text = request.body ?? ''
  const base64 = request.bodyIsBase64 === true
  if (base64 && !BASE64.test(text)) throw new InvalidInputError('body: expected base64, as bodyIsBase64 says')
  const body = Buffer.from(text, base64 ? 'base64' : 'utf8')
  // The route's JSON limit leaves room for base64; this is the limit on what the function gets.
  if (body.length > MAX_INVOKE_BODY_BYTES) {
    throw new TooLargeError(
      `invoke body too large: ${body.length} bytes (${base64 ? 'after base64 decoding' : 'UTF-8'}), at most ${MAX_INVOKE_BODY_BYTES}`,
    )
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

function requestMethod(method: string): string {
  // Node's client sends methods upper-cased; check the one that would go out.
  const upper = method.toUpperCase()
  const refusal = REFUSED_METHODS[upper]
  if (refusal !== undefined) throw new InvalidInputError(`method: ${refusal}`)
  return upper
}

// RFC 9110 §5.5 field values: visible ASCII, space and tab. obs-text (bytes 0x80-0xFF) is
// refused too: a JavaScript string would go out as Latin-1, which no caller means.
const FIELD_VALUE = /^[\t\x20-\x7e]*$/

function forwardedHeaders(headers: Record<string, string[]> = {}): Record<string, string[]> {
  const lower: Record<string, string[]> = {}
  for (const [name, values] of Object.entries(headers)) (lower[name.toLowerCase()] ??= []).push(...values)
  const named = new Set(
    (lower.connection ?? []).flatMap((value) => value.split(',').map((name) => name.trim().toLowerCase())),
  )
  const out: Record<string, string[]> = {}
  for (const [name, values] of Object.entries(lower)) {
    if (NOT_FORWARDED.has(name) || named.has(name) || name.startsWith('impersonate-')) continue
    if (!/^[!#$%&'*+.^_`|~0-9a-z-]+$/.test(name))
      throw new InvalidInputError(`headers: ${JSON.stringify(name)} is not a header name`)
    if (!values.every((value) => FIELD_VALUE.test(value)))
      throw new InvalidInputError(`headers.${name}: a value holds a character outside visible ASCII, space and tab`)
    out[name] = values
  }
  return out
}

export function prepareInvoke(request: InvokeRequestT, route: string): PreparedInvoke {
  const body = requestBody(request)
  const path = parseInvokePath(request.path)
  const target = invokeTarget(path)
  if (!routeTakes(route, path))
    throw new InvalidInputError(
      `path ${target.split('?')[0] as string} is not one this function's route ${route} takes`,
    )
  const headers = forwardedHeaders(request.headers)
  headers['content-length'] = [String(body.length)]
  return { method: requestMethod(request.method), path: target, headers, body }
}
