// The verification of an `Authorization: Bearer` JWT against the provider's keys (oidc-keys.ts),
// and the cache of tokens already verified that spares the signature check on every request.
// What a valid token may then do (scopes, claims) is each process's own business.
import { jwtVerify } from 'jose'
import type { JWTPayload } from 'jose'
import type { OidcKeys } from './oidc-keys.js'
import { IdpUnavailableError, TokenRejectedError, codeOf } from './token-errors.js'

// Only asymmetric algorithms: a verifier that accepted HS256 could be fooled by a token
// "signed" with the provider's public key.
const ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA']
const MAX_TOKEN_LENGTH = 16 * 1024
const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/
const BEARER = /^Bearer +(\S+) *$/i

/** The credentials of an `Authorization: Bearer ...` header; null when it is absent or another scheme. */
export function bearerCredentials(authorization: string): string | null {
  const match = BEARER.exec(authorization)
  return match === null ? null : (match[1] as string)
}

/** How long a verified token is trusted without checking its signature again, at most. */
const VERIFIED_TTL_MS = 5 * 60_000
/** Verified tokens kept at once; the oldest goes first. */
const VERIFIED_MAX = 4096

/**
 * Verify the JWT of an Authorization header: signature by one of the provider's keys with an
 * asymmetric algorithm, `iss`, `exp` (required) and `nbf`, and `aud` when an audience is given
 * (empty: any). The keys are revalidated first when their refresh time has come.
 * Rejects with TokenRejectedError (the reason is in the message) or IdpUnavailableError.
 */
export async function verifyBearer(keys: OidcKeys, authorization: string, audience: string): Promise<JWTPayload> {
  if (authorization === '') throw new TokenRejectedError('missing bearer token', true)
  const token = bearerCredentials(authorization)
  if (token === null) throw new TokenRejectedError('malformed authorization header')
  if (token.length > MAX_TOKEN_LENGTH || !JWT_SHAPE.test(token)) throw new TokenRejectedError('malformed token')
  // Before the cache: a refresh that drops a key also forgets the tokens it verified.
  await keys.revalidate()
  // Clients reuse one token for many requests, and checking its signature is the dominant cost
  // of an authenticated request: a token verified once is trusted until it expires (and at
  // most VERIFIED_TTL_MS). Only successes are kept, so a bad token is checked every time.
  const known = keys.verified.get(token)
  if (known !== undefined) {
    if (known.until > keys.now() && known.audience === audience) return known.payload
    keys.verified.delete(token)
  }
  try {
    const { payload } = await jwtVerify(token, keys.getKey, {
      issuer: keys.issuer,
      algorithms: ALGORITHMS,
      // A token without an expiry would be good forever once leaked.
      requiredClaims: ['exp'],
      currentDate: new Date(keys.now()),
      ...(audience === '' ? {} : { audience }),
    })
    remember(keys, token, payload, audience)
    return payload
  } catch (error) {
    if (error instanceof IdpUnavailableError) throw error
    throw new TokenRejectedError(rejectionReason(error))
  }
}

function remember(keys: OidcKeys, token: string, payload: JWTPayload, audience: string): void {
  if (typeof payload.exp !== 'number') return // jwtVerify required it; this only narrows the type
  const { verified } = keys
  if (verified.size >= VERIFIED_MAX) verified.delete(verified.keys().next().value as string)
  verified.set(token, { payload, audience, until: Math.min(payload.exp * 1000, keys.now() + VERIFIED_TTL_MS) })
}

function rejectionReason(error: unknown): string {
  switch (codeOf(error)) {
    case 'ERR_JWT_EXPIRED':
      return 'token expired'
    case 'ERR_JOSE_ALG_NOT_ALLOWED':
      return 'token algorithm not accepted'
    case 'ERR_JWKS_NO_MATCHING_KEY':
      return 'token signing key unknown'
    case 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED':
      return 'invalid token signature'
    case 'ERR_JWT_CLAIM_VALIDATION_FAILED': {
      const claim = (error as { claim?: string }).claim
      if (claim === 'iss') return 'token issuer not accepted'
      if (claim === 'aud') return 'token audience not accepted'
      if (claim === 'nbf') return 'token not yet valid'
      if (claim === 'exp')
        return (error as { reason?: string }).reason === 'missing' ? 'token has no exp claim' : 'invalid token claims'
      return 'invalid token claims'
    }
    default:
      return 'invalid token'
  }
}
