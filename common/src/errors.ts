// The one error hierarchy of every package. A refusal carries what its HTTP answer needs: a
// stable `code` that callers branch on (never the message text), the `status`, a `message`
// written for the caller and safe to show as it is (`{"error": message}`), and any headers the
// answer must carry (WWW-Authenticate, Retry-After, Allow). Anything thrown that is not an
// HttpError is an internal error: its message is only logged. A setting that does not parse is
// a ConfigError (common/src/config/settings.ts): the process exits with code 2.

export class HttpError extends Error {
  readonly code: string = 'ERR_HTTP'
  readonly status: number
  readonly headers: Record<string, string>
  constructor(status: number, message: string, headers: Record<string, string> = {}) {
    super(message)
    this.name = new.target.name
    this.status = status
    this.headers = headers
  }
}

export class InvalidInputError extends HttpError {
  override readonly code: string = 'ERR_INVALID_INPUT'
  constructor(message: string) {
    super(400, message)
  }
}

export class UnauthorizedError extends HttpError {
  override readonly code: string = 'ERR_UNAUTHORIZED'
  constructor(message: string, headers: Record<string, string>) {
    super(401, message, headers)
  }
}

/** A valid token whose caller may not do this (another tenant's application, a read-only caller's write). */
export class ForbiddenError extends HttpError {
  override readonly code: string = 'ERR_FORBIDDEN'
  constructor(message: string, headers: Record<string, string> = {}) {
    super(403, message, headers)
  }
}

export class NotFoundError extends HttpError {
  override readonly code: string = 'ERR_NOT_FOUND'
  constructor(message: string) {
    super(404, message)
  }
}

/** A name (or route) another application or function of the same application already has. */
export class ConflictError extends HttpError {
  override readonly code: string = 'ERR_CONFLICT'
  constructor(message: string) {
    super(409, message)
  }
}

export class TooLargeError extends HttpError {
  override readonly code: string = 'ERR_TOO_LARGE'
  constructor(message: string) {
    super(413, message)
  }
}

/** Past a fair share (a tenant's builds): `retryAfterSeconds` says when to ask again. */
export class TooManyRequestsError extends HttpError {
  override readonly code: string = 'ERR_TOO_MANY_REQUESTS'
  constructor(message: string, retryAfterSeconds: number) {
    super(429, message, { 'retry-after': String(retryAfterSeconds) })
  }
}

/** A dependency (identity provider, cluster, metrics) is down, or a capacity is full. */
export class UnavailableError extends HttpError {
  override readonly code: string = 'ERR_UNAVAILABLE'
  constructor(message: string, headers: Record<string, string> = {}) {
    super(503, message, headers)
  }
}
