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

export class InvalidInputError extends HttpError {
  override readonly code: string = 'ERR_INVALID_INPUT'
  constructor (message: string, headers: Record<string, string> = {}) { super(400, message, headers) }
}

export class UnauthorizedError extends HttpError {
  override readonly code: string = 'ERR_UNAUTHORIZED'
  constructor (message: string, headers: Record<string, string>) { super(401, message, headers) }
}

export class ForbiddenError extends HttpError {
  override readonly code: string = 'ERR_FORBIDDEN'
  constructor (message: string, headers: Record<string, string> = {}) { super(403, message, headers) }
}

export class NotFoundError extends HttpError {
  override readonly code: string = 'ERR_NOT_FOUND'
  constructor (message: string, headers: Record<string, string> = {}) { super(404, message, headers) }
}

export class MethodNotAllowedError extends HttpError {
  override readonly code: string = 'ERR_METHOD_NOT_ALLOWED'
  /** `allow` lists the methods the path takes, as the Allow header. */
  constructor (message: string, allow: string) { super(405, message, { allow }) }
}

export class ConflictError extends HttpError {
  override readonly code: string = 'ERR_CONFLICT'
  constructor (message: string, headers: Record<string, string> = {}) { super(409, message, headers) }
}

export class TooLargeError extends HttpError {
  override readonly code: string = 'ERR_TOO_LARGE'
  constructor (message: string, headers: Record<string, string> = {}) { super(413, message, headers) }
}

export class UpgradeRequiredError extends HttpError {
  override readonly code: string = 'ERR_UPGRADE_REQUIRED'
  constructor (message: string, headers: Record<string, string>) { super(426, message, headers) }
}

/** An admission limit passed; `retryAfterSeconds` goes into Retry-After. */
export class TooManyRequestsError extends HttpError {
  override readonly code: string = 'ERR_TOO_MANY_REQUESTS'
  constructor (message: string, retryAfterSeconds: number) { super(429, message, { 'retry-after': String(retryAfterSeconds) }) }
}

export class InternalError extends HttpError {
  override readonly code: string = 'ERR_INTERNAL'
  constructor () { super(500, 'internal error') }
}

/** A dependency (identity provider, cluster, metrics) is down, or a capacity is full. */
export class UnavailableError extends HttpError {
  override readonly code: string = 'ERR_UNAVAILABLE'
  constructor (message: string, headers: Record<string, string> = {}) { super(503, message, headers) }
}
