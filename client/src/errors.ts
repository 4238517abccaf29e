// Typed errors: one class, a stable `code` to branch on, the HTTP status and the relay's
// error body ({"error": "..."}) when there was one.

export type RelayErrorCode =
  | 'unauthorized' // 401: missing, invalid or expired token (admin) or a bad slot token (attach)
  | 'forbidden' // 403: token without the scope, or an Origin the relay refuses
  | 'not_found' // 404: unknown, deleted or expired session
  | 'conflict' // 409: the slot already has a connection
  | 'rate_limited' // 429
  | 'unavailable' // 503: identity provider unreachable, session table full
  | 'bad_request' // other 4xx
  | 'server_error' // other 5xx
  | 'network' // no HTTP answer at all
  | 'login_denied' // device login: the user refused
  | 'login_expired' // device login: the code expired before approval
  | 'not_logged_in' // no stored token and none given
  | 'closed' // the connection is closed

export class RelayError extends Error {
  readonly code: RelayErrorCode
  readonly status: number | undefined
  readonly body: unknown

  constructor(code: RelayErrorCode, message: string, opts: { status?: number; body?: unknown; cause?: unknown } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause })
    this.name = 'RelayError'
    this.code = code
    this.status = opts.status
    this.body = opts.body
  }
}

function codeForStatus(status: number): RelayErrorCode {
  switch (status) {
    case 401:
      return 'unauthorized'
    case 403:
      return 'forbidden'
    case 404:
      return 'not_found'
    case 409:
      return 'conflict'
    case 429:
      return 'rate_limited'
    case 503:
      return 'unavailable'
    default:
      return status >= 500 ? 'server_error' : 'bad_request'
  }
}

/** The error for an HTTP refusal; `text` is the body as received. */
export function httpError(what: string, status: number, text: string): RelayError {
  let body: unknown = text
  try {
    body = JSON.parse(text)
  } catch {}
  const reason =
    typeof body === 'object' && body !== null && typeof (body as { error?: unknown }).error === 'string'
      ? (body as { error: string }).error
      : text.slice(0, 200)
  return new RelayError(codeForStatus(status), `${what}: ${status} ${reason}`.trim(), { status, body })
}
