// The one error root of both processes. A refusal carries what its HTTP answer needs: a stable
// `code` that callers branch on (never the message text), the `status`, a `message` written for
// the caller and safe to show as it is (`{"error": message}`), and any headers the answer must
// carry (WWW-Authenticate, Retry-After, Allow). Anything thrown that is not an HttpError is an
// internal error: its message is only logged.

export class HttpError extends Error {
  readonly code: string = 'ERR_HTTP'
  readonly status: number
  readonly headers: Record<string, string>
  constructor (status: number, message: string, headers: Record<string, string> = {}) {
    super(message)
    this.name = new.target.name
    this.status = status
    this.headers = headers
  }
}

export class UnauthorizedError extends HttpError {
  override readonly code: string = 'ERR_UNAUTHORIZED'
  constructor (message: string, headers: Record<string, string>) { super(401, message, headers) }
}

export class ForbiddenError extends HttpError {
  override readonly code: string = 'ERR_FORBIDDEN'
  constructor (message: string, headers: Record<string, string> = {}) { super(403, message, headers) }
}

/** A dependency (identity provider, cluster, metrics) is down, or a capacity is full. */
export class UnavailableError extends HttpError {
  override readonly code: string = 'ERR_UNAVAILABLE'
  constructor (message: string, headers: Record<string, string> = {}) { super(503, message, headers) }
}
