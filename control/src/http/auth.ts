// Bearer id tokens. A token is accepted when it is a JWT signed by one of the issuer's keys
// (asymmetric algorithms only), its `iss` is the configured issuer, its `aud` holds the
// configured audience (the OAuth client id the token was issued to; any when unset), and it
// has not expired. That is what OpenID Connect Core §3.1.3.7 asks of an id token's consumer,
// minus the nonce, which only the client that started the login can check. Optionally the
// token must also carry a claim value (a group or role), else 403. The claims then say who the
// caller is (domain/access.ts): their tenants, admin, read-only.
import type { FastifyRequest } from 'fastify'
import type { JWTPayload } from 'jose'
import { createOidcKeys } from '@session-relay/auth/oidc-keys'
import { verifyBearer } from '@session-relay/auth/verify-bearer'
import type { OidcKeysOptions, OidcLogger } from '@session-relay/auth/oidc-keys'
import { insufficientScope, tokenRefusal } from '@session-relay/auth/refusals'
import type { RequiredClaim } from './auth-settings.js'
import type { Caller } from '../domain/access.js'
import { everyoneCaller } from '../domain/access.js'

export type AuthOptions = {
  issuer: string
  /** Empty disables the audience check. */
  audience: string
  requiredClaim: RequiredClaim | null
  /** Empty: every caller is in the tenant `default`. */
  tenantClaim?: string | undefined
  adminClaim?: RequiredClaim | null | undefined
  readonlyClaim?: RequiredClaim | null | undefined
  logger: OidcLogger
} & Pick<OidcKeysOptions, 'fetchTimeoutMs' | 'refreshCooldownMs' | 'retryMs' | 'minRefreshMs' | 'maxRefreshMs' | 'now'>

export type Authenticator = {
  /** Resolves with who the token's bearer is, or rejects with a 401, 403 or 503 HttpError. */
  authenticate(authorization: string): Promise<Caller>
  close(): void
}

export function createAuthenticator(opts: AuthOptions): Authenticator {
  const keys = createOidcKeys(opts)

  async function authenticate(authorization: string): Promise<Caller> {
    let payload: JWTPayload
    try {
      payload = await verifyBearer(keys, authorization, opts.audience)
    } catch (error) {
      throw tokenRefusal(error)
    }
    const claim = opts.requiredClaim
    if (claim !== null && !carries(payload[claim.name], claim.value)) {
      throw insufficientScope(`token lacks the required claim ${claim.name}=${claim.value}`)
    }
    return callerFrom(payload, opts)
  }

  return { authenticate, close: () => keys.close() }
}

function callerFrom(payload: JWTPayload, opts: AuthOptions): Caller {
  const admin = holds(payload, opts.adminClaim)
  const readOnly = !admin && holds(payload, opts.readonlyClaim)
  const subject = typeof payload.sub === 'string' ? payload.sub : undefined
  const name = opts.tenantClaim ?? ''
  if (name === '') return { ...everyoneCaller, admin, readOnly, subject }
  const claim = payload[name]
  // Repeated values are one tenant, not a choice between two.
  const tenants = [
    ...new Set(
      (Array.isArray(claim) ? claim : [claim]).filter(
        (value): value is string => typeof value === 'string' && value !== '',
      ),
    ),
  ]
  if (tenants.length === 0 && !admin) throw insufficientScope(`token lacks the tenant claim ${name}`)
  return { tenants, admin, readOnly, subject }
}

const holds = (payload: JWTPayload, claim: RequiredClaim | null | undefined): boolean =>
  claim !== null && claim !== undefined && carries(payload[claim.name], claim.value)

/** A claim carries a value when it equals it or, as an array (groups, roles), contains it. */
function carries(claim: unknown, value: string): boolean {
  return Array.isArray(claim) ? claim.includes(value) : claim === value
}

const callers = new WeakMap<FastifyRequest, Caller>()

/** Who made the request; everyone (the default tenant) when authentication is off. */
export function callerOf(request: FastifyRequest): Caller {
  return callers.get(request) ?? everyoneCaller
}

/** An onRequest hook that lets a request through only with an acceptable token, and remembers its caller. */
export function requireToken(auth: Authenticator) {
  return async (request: FastifyRequest): Promise<void> => {
    callers.set(request, await auth.authenticate(request.headers.authorization ?? ''))
  }
}
