// Errors carry a stable `code` so callers branch on it, never on message text. An ApiError's
// message is written for the caller and goes into the `{"error": ...}` body as it is; anything
// else that reaches the error handler is an internal error and its message is only logged.

import { HttpError } from '../../common/src/errors.js'

/** A setting that does not parse: the process exits with code 2. Shared with the relay. */
export { ConfigError } from '../../common/src/config/settings.js'

/** A refusal with an HTTP status; the message is safe to show. The common root's, so both processes share one. */
export class ApiError extends HttpError {
  override readonly code: string = 'ERR_API'
}

/** The common refusals (common/src/auth/refusals.ts) as the ApiErrors this process answers with, status, message and headers unchanged. */
export function asApiError (error: HttpError): ApiError {
  return error instanceof ApiError ? error : new ApiError(error.status, error.message, error.headers)
}

export class InvalidInputError extends ApiError {
  override readonly code = 'ERR_INVALID_INPUT'
  constructor (message: string) { super(400, message) }
}

/** A valid token whose caller may not do this (another tenant's application, a read-only caller's write). */
export class ForbiddenError extends ApiError {
  override readonly code = 'ERR_FORBIDDEN'
  constructor (message: string) { super(403, message) }
}

export class NotFoundError extends ApiError {
  override readonly code = 'ERR_NOT_FOUND'
  constructor (message: string) { super(404, message) }
}

/** A name (or route) another application or function of the same application already has. */
export class ConflictError extends ApiError {
  override readonly code = 'ERR_CONFLICT'
  constructor (message: string) { super(409, message) }
}

export class TooLargeError extends ApiError {
  override readonly code = 'ERR_TOO_LARGE'
  constructor (message: string) { super(413, message) }
}

/** Past a fair share (a tenant's builds): `retryAfterSeconds` says when to ask again. */
export class TooManyRequestsError extends ApiError {
  override readonly code = 'ERR_TOO_MANY_REQUESTS'
  constructor (message: string, retryAfterSeconds: number) { super(429, message, { 'retry-after': String(retryAfterSeconds) }) }
}

/** A dependency (cluster, metrics, identity provider) is missing or down. */
export class UnavailableError extends ApiError {
  override readonly code = 'ERR_UNAVAILABLE'
  constructor (message: string, headers: Record<string, string> = {}) { super(503, message, headers) }
}
