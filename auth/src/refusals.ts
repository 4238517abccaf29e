// The one mapping from a failed token check to the HTTP answer both processes give: what
// status, `{"error": ...}` message and WWW-Authenticate or Retry-After header each failure
// of the identity provider or of a token gets. Written once so that the relay's and the
// control plane's answers cannot drift apart.
import { ForbiddenError, UnauthorizedError, UnavailableError } from '@session-relay/common/errors'
import { IdpUnavailableError, TokenRejectedError } from './token-errors.js'

/** How long a client is told to wait while the identity provider cannot be reached. */
const IDP_RETRY_AFTER_SECONDS = '5'

/**
 * The answer to an error from verifyBearer or OidcKeys: 401 invalid_token for a token that is
 * not acceptable, 401 with a bare `Bearer` challenge when there was none (RFC 6750 §3.1: no
 * error code without credentials), 503 while the provider is unavailable. Anything else is
 * not a refusal and is thrown on.
 */
export function tokenRefusal(error: unknown): UnauthorizedError | UnavailableError {
  if (error instanceof IdpUnavailableError) {
    return new UnavailableError('identity provider unavailable', { 'retry-after': IDP_RETRY_AFTER_SECONDS })
  }
  if (error instanceof TokenRejectedError) {
    return new UnauthorizedError(error.message, {
      'www-authenticate': error.missing ? 'Bearer' : 'Bearer error="invalid_token"',
    })
  }
  throw error
}

/** 403 insufficient_scope for a valid token that may not do this; `scope` names the one needed, when there is one. */
export function insufficientScope(message: string, scope?: string): ForbiddenError {
  const challenge =
    scope === undefined ? 'Bearer error="insufficient_scope"' : `Bearer error="insufficient_scope", scope="${scope}"`
  return new ForbiddenError(message, { 'www-authenticate': challenge })
}
