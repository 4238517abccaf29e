import { HttpError } from '../errors.js'
import type { OriginPolicy } from './origins.js'
import type { Headers } from './responses.js'
import { send, sendError } from './responses.js'
import type { HttpRequest, HttpResponse } from './uws.js'

const ALLOWED_METHODS = 'GET, POST, DELETE'
const ALLOWED_HEADERS = 'Authorization, Content-Type'
const EXPOSED_HEADERS = 'Location, Retry-After, WWW-Authenticate'

/**
 * CORS response headers for a request's Origin: none when there is no Origin (not a browser),
 * `null` when the Origin is not allowed (the browser will then block the response).
 */
export function corsHeaders(allows: OriginPolicy, origin: string, host: string): Headers | null {
  if (origin === '') return {}
  if (!allows(origin, host)) return null
  return { 'access-control-allow-origin': origin, 'access-control-expose-headers': EXPOSED_HEADERS, vary: 'Origin' }
}

function preflightHeaders(cors: Headers): Headers {
  return {
    ...cors,
    'access-control-allow-methods': ALLOWED_METHODS,
    'access-control-allow-headers': ALLOWED_HEADERS,
    'access-control-max-age': '600',
  }
}

/** The answer to a CORS preflight: 204 with what the relay allows, or 403 for an Origin it does not. */
export function preflight(allowsOrigin: OriginPolicy) {
  return (res: HttpResponse, req: HttpRequest): void => {
    const cors = corsHeaders(allowsOrigin, req.getHeader('origin'), req.getHeader('host'))
    if (cors === null) return sendError(res, new HttpError(403, 'origin not allowed'))
    send(res, 204, '', { ...preflightHeaders(cors), allow: 'GET, POST, DELETE, OPTIONS' })
  }
}
