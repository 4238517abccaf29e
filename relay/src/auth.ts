import type { JWTPayload } from 'jose'
import { createOidcKeys } from '@session-relay/auth/oidc-keys'
import { verifyBearer } from '@session-relay/auth/verify-bearer'
import type { OidcKeysOptions } from '@session-relay/auth/oidc-keys'
import { insufficientScope, tokenRefusal } from '@session-relay/auth/refusals'
import type { RelayConfig } from './config.js'
import type { Logger } from './logger.js'

export const SCOPES = ['relay:session:create', 'relay:session:read', 'relay:session:delete'] as const
export type Scope = (typeof SCOPES)[number]

/** The parts of the provider's OpenID discovery document the relay uses. */
type ProviderMetadata = {
  issuer: string
  jwks_uri: string
  authorization_endpoint: string
  token_endpoint: string
  device_authorization_endpoint: string
}

type AuthOptions = {
  issuer: string
  /** Empty disables the audience check. */
  audience: string
  logger: Logger
  /** Every fetch from the provider gives up after this long. */
  fetchTimeoutMs?: number
  /** At most one key refresh per this long, however many unknown `kid`s arrive. */
  refreshCooldownMs?: number
  /** While the provider is unreachable, retry in the background this often. */
  retryMs?: number
} & Pick<OidcKeysOptions, 'minRefreshMs' | 'maxRefreshMs' | 'now'>

/** Tuning for the identity-provider client (timeouts, refresh cooldown); tests shorten them. */
export type AuthTuning = Partial<Pick<AuthOptions, 'fetchTimeoutMs' | 'refreshCooldownMs' | 'retryMs' | 'now'>>

export type Authenticator = {
  /** Resolves with the token's claims, or rejects with an HttpError (401, 403 or 503). */
  authorize(authorization: string, scope: Scope): Promise<JWTPayload>
  /** The provider's metadata; rejects with a 503 HttpError while it cannot be fetched. */
  metadata(): Promise<ProviderMetadata>
  close(): void
}

function createAuthenticator(opts: AuthOptions): Authenticator {
  const keys = createOidcKeys(opts)

  async function authorize(authorization: string, scope: Scope): Promise<JWTPayload> {
    let payload: JWTPayload
    try {
      payload = await verifyBearer(keys, authorization, opts.audience)
    } catch (error) {
      throw tokenRefusal(error)
    }
    if (!scopesOf(payload).includes(scope)) throw insufficientScope(`token lacks scope ${scope}`, scope)
    return payload
  }

  async function metadata(): Promise<ProviderMetadata> {
    let doc: Record<string, unknown>
    try {
      doc = await keys.discovery()
    } catch (error) {
      throw tokenRefusal(error)
    }
    const text = (value: unknown): string => (typeof value === 'string' ? value : '')
    return {
      issuer: opts.issuer,
      jwks_uri: text(doc.jwks_uri),
      authorization_endpoint: text(doc.authorization_endpoint),
      token_endpoint: text(doc.token_endpoint),
      device_authorization_endpoint: text(doc.device_authorization_endpoint),
    }
  }

  return { authorize, metadata, close: () => keys.close() }
}

/** Scopes from `scope` (space-delimited, RFC 8693) or `scp` (array, as some providers issue). */
function scopesOf(payload: JWTPayload): string[] {
  const scopes: string[] = []
  if (typeof payload.scope === 'string') scopes.push(...payload.scope.split(' ').filter(Boolean))
  if (Array.isArray(payload.scp)) scopes.push(...payload.scp.filter((s): s is string => typeof s === 'string'))
  else if (typeof payload.scp === 'string') scopes.push(...payload.scp.split(' ').filter(Boolean))
  return scopes
}

/** The authenticator the settings ask for; null with --no-auth, which it warns about, as it does about accepting any audience. */
export function authenticatorFor(config: RelayConfig, logger: Logger, tuning: AuthTuning = {}): Authenticator | null {
  if (config.noAuth) {
    logger.warn(
      'auth is disabled (--no-auth): anyone who can reach the admin API can create, read and delete sessions; never run this in production',
    )
    return null
  }
  const auth = createAuthenticator({
    issuer: config.oidcIssuer,
    audience: config.oidcAudience,
    logger,
    minRefreshMs: config.jwksMinRefreshMs,
    maxRefreshMs: config.jwksMaxRefreshMs,
    ...tuning,
  })
  if (config.oidcAudience === '') logger.warn('no --oidc-audience: tokens issued for any audience are accepted')
  return auth
}
