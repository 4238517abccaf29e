// The two ways a bearer token is not accepted, shared by the key set (the provider cannot be
// reached) and the verification (the token is refused); refusals.ts maps them to HTTP answers.

/** The provider's discovery document or keys cannot be fetched. */
export class IdpUnavailableError extends Error {
  readonly code = 'ERR_IDP_UNAVAILABLE'
  constructor(message: string, options?: ErrorOptions) {
    super(message, options)
    this.name = 'IdpUnavailableError'
  }
}

/** A bearer token that is missing or not acceptable; the message is safe to show the caller. */
export class TokenRejectedError extends Error {
  readonly code = 'ERR_TOKEN_REJECTED'
  /** No credentials at all: RFC 6750 §3.1 wants the challenge without an error code then. */
  readonly missing: boolean
  constructor(message: string, missing = false) {
    super(message)
    this.name = 'TokenRejectedError'
    this.missing = missing
  }
}

/** The `code` jose puts on its errors (ERR_JWT_EXPIRED, ERR_JWKS_NO_MATCHING_KEY, ...). */
export function codeOf(error: unknown): string | undefined {
  return typeof error === 'object' && error !== null ? (error as { code?: string }).code : undefined
}
