// Bearer id tokens. A token is accepted when it is a JWT signed by one of the issuer's keys
// (asymmetric algorithms only), its `iss` is the configured issuer, its `aud` holds the
// configured audience (the OAuth client id the token was issued to; any when unset), and it
// has not expired. That is what OpenID Connect Core §3.1.3.7 asks of an id token's consumer,
// minus the nonce, which only the client that started the login can check. Optionally the
// token must also carry a claim value (a group or role), else 403.
import type { FastifyRequest } from 'fastify'
import type { JWTPayload } from 'jose'
import { createOidcKeys, verifyBearer } from '../../../common/src/auth/oidc-keys.js'
import type { OidcKeysOptions, OidcLogger } from '../../../common/src/auth/oidc-keys.js'
import { insufficientScope, tokenRefusal } from '../../../common/src/auth/refusals.js'
import type { RequiredClaim } from '../config.js'
import { asApiError } from '../errors.js'

export type AuthOptions = {
  issuer: string
  /** Empty disables the audience check. */
  audience: string
  requiredClaim: RequiredClaim | null
  logger: OidcLogger
} & Pick<OidcKeysOptions, 'fetchTimeoutMs' | 'refreshCooldownMs' | 'retryMs' | 'minRefreshMs' | 'maxRefreshMs' | 'now'>

export type Authenticator = {
  /** Resolves with the token's claims, or rejects with a 401, 403 or 503 ApiError. */
  authenticate (authorization: string): Promise<JWTPayload>
  close (): void
}

export function createAuthenticator (opts: AuthOptions): Authenticator {
  const keys = createOidcKeys(opts)

  async function authenticate (authorization: string): Promise<JWTPayload> {
    let payload: JWTPayload
    try {
      payload = await verifyBearer(keys, authorization, opts.audience)
    } catch (error) {
      throw asApiError(tokenRefusal(error))
    }
    const claim = opts.requiredClaim
    if (claim !== null && !carries(payload[claim.name], claim.value)) {
      throw asApiError(insufficientScope(`token lacks the required claim ${claim.name}=${claim.value}`))
    }
    return payload
  }

  return { authenticate, close: () => keys.close() }
}

/** A claim carries a value when it equals it or, as an array (groups, roles), contains it. */
function carries (claim: unknown, value: string): boolean {
  return Array.isArray(claim) ? claim.includes(value) : claim === value
}

/** An onRequest hook that lets a request through only with an acceptable token. */
export function requireToken (auth: Authenticator) {
  return async (request: FastifyRequest): Promise<void> => {
    await auth.authenticate(request.headers.authorization ?? '')
  }
}
