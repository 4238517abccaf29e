import { createLocalJWKSet, jwtVerify } from 'jose'
import type { FlattenedJWSInput, JSONWebKeySet, JWSHeaderParameters, JWTPayload } from 'jose'
import { HttpError, IdpUnavailableError } from './errors.js'
import { bearerCredentials } from './http.js'
import type { Logger } from './logger.js'

export const SCOPES = ['relay:session:create', 'relay:session:read', 'relay:session:delete'] as const
export type Scope = typeof SCOPES[number]

/** The parts of the provider's OpenID discovery document the relay uses. */
export type ProviderMetadata = {
  issuer: string
  jwks_uri: string
  authorization_endpoint: string
  token_endpoint: string
  device_authorization_endpoint: string
}

export type AuthOptions = {
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
}

export type Authenticator = {
  /** Resolves with the token's claims, or rejects with an HttpError (401, 403 or 503). */
  authorize (authorization: string, scope: Scope): Promise<JWTPayload>
  /** The provider's metadata; rejects with a 503 HttpError while it cannot be fetched. */
  metadata (): Promise<ProviderMetadata>
  close (): void
}

// Only asymmetric algorithms: a relay that accepted HS256 could be fooled by a token
// "signed" with the provider's public key.
const ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA']
const MAX_TOKEN_LENGTH = 16 * 1024
const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/

type KeySet = ReturnType<typeof createLocalJWKSet>

export function createAuthenticator (opts: AuthOptions): Authenticator {
  const fetchTimeoutMs = opts.fetchTimeoutMs ?? 5_000
  const refreshCooldownMs = opts.refreshCooldownMs ?? 5_000
  const retryMs = opts.retryMs ?? 5_000
  const { logger } = opts
  const verifyOptions = {
    issuer: opts.issuer,
    algorithms: ALGORITHMS,
    ...(opts.audience === '' ? {} : { audience: opts.audience }),
  }

  let meta: ProviderMetadata | null = null
  let keys: KeySet | null = null
  let lastAttempt = 0
  let inFlight: Promise<KeySet> | null = null
  let available = true
  let retryTimer: NodeJS.Timeout | null = null

  /** Fetch the discovery document, then the keys it points at. One fetch at a time. */
  function refresh (): Promise<KeySet> {
    if (inFlight !== null) return inFlight
    lastAttempt = Date.now()
    inFlight = (async () => {
      try {
        const doc = await fetchJson(discoveryUrl(opts.issuer), fetchTimeoutMs)
        const fresh = parseMetadata(doc, opts.issuer)
        const jwks = await fetchJson(fresh.jwks_uri, fetchTimeoutMs) as JSONWebKeySet
        if (!Array.isArray(jwks?.keys)) throw new Error('JWKS without a keys array')
        meta = fresh
        keys = createLocalJWKSet(jwks)
        if (!available) logger.info({ issuer: opts.issuer }, 'identity provider reachable again')
        available = true
        return keys
      } catch (error) {
        if (available) logger.warn({ issuer: opts.issuer, err: describe(error) }, 'identity provider unavailable')
        available = false
        throw new IdpUnavailableError('identity provider unavailable', { cause: error })
      } finally {
        inFlight = null
      }
    })()
    return inFlight
  }

  async function currentKeys (): Promise<KeySet> {
    if (keys !== null) return keys
    // Not loaded yet: try again, but not more than once per cooldown while it keeps failing.
    if (inFlight === null && Date.now() - lastAttempt < Math.min(refreshCooldownMs, 1_000)) {
      throw new IdpUnavailableError('identity provider unavailable')
    }
    return refresh()
  }

  function retryUntilLoaded (): void {
    refresh().catch(() => {
      retryTimer = setTimeout(retryUntilLoaded, retryMs)
      retryTimer.unref()
    })
  }
  retryUntilLoaded()

  const getKey = async (header: JWSHeaderParameters, token: FlattenedJWSInput): ReturnType<KeySet> => {
    const set = await currentKeys()
    try {
      return await set(header, token)
    } catch (error) {
      // A key the relay has not seen: the provider may have rotated. Refresh, rate-limited;
      // joining a refresh already in flight costs no fetch, so it is never refused.
      if (codeOf(error) !== 'ERR_JWKS_NO_MATCHING_KEY') throw error
      if (inFlight === null && Date.now() - lastAttempt < refreshCooldownMs) throw error
      return (await refresh())(header, token)
    }
  }

  async function authorize (authorization: string, scope: Scope): Promise<JWTPayload> {
    const token = bearerToken(authorization)
    let payload: JWTPayload
    try {
      ({ payload } = await jwtVerify(token, getKey, verifyOptions))
    } catch (error) {
      throw toHttpError(error)
    }
    if (!scopesOf(payload).includes(scope)) {
      throw new HttpError(403, `token lacks scope ${scope}`, {
        'www-authenticate': `Bearer error="insufficient_scope", scope="${scope}"`,
      })
    }
    return payload
  }

  async function metadata (): Promise<ProviderMetadata> {
    try {
      await currentKeys()
    } catch (error) {
      throw toHttpError(error)
    }
    return meta as ProviderMetadata
  }

  function close (): void {
    if (retryTimer !== null) clearTimeout(retryTimer)
  }

  return { authorize, metadata, close }
}

function bearerToken (authorization: string): string {
  // RFC 6750 §3.1: a request without credentials gets the challenge but no error code.
  if (authorization === '') throw new HttpError(401, 'missing bearer token', { 'www-authenticate': 'Bearer' })
  const token = bearerCredentials(authorization)
  if (token === null) throw unauthorized('malformed authorization header')
  if (token.length > MAX_TOKEN_LENGTH || !JWT_SHAPE.test(token)) throw unauthorized('malformed token')
  return token
}

/** Scopes from `scope` (space-delimited, RFC 8693) or `scp` (array, as some providers issue). */
export function scopesOf (payload: JWTPayload): string[] {
  const scopes: string[] = []
  if (typeof payload.scope === 'string') scopes.push(...payload.scope.split(' ').filter(Boolean))
  if (Array.isArray(payload.scp)) scopes.push(...payload.scp.filter((s): s is string => typeof s === 'string'))
  else if (typeof payload.scp === 'string') scopes.push(...payload.scp.split(' ').filter(Boolean))
  return scopes
}

function unauthorized (message: string): HttpError {
  return new HttpError(401, message, { 'www-authenticate': 'Bearer error="invalid_token"' })
}

function toHttpError (error: unknown): HttpError {
  if (error instanceof HttpError) return error
  if (error instanceof IdpUnavailableError) return new HttpError(503, 'identity provider unavailable', { 'retry-after': '5' })
  switch (codeOf(error)) {
    case 'ERR_JWT_EXPIRED': return unauthorized('token expired')
    case 'ERR_JOSE_ALG_NOT_ALLOWED': return unauthorized('token algorithm not accepted')
    case 'ERR_JWKS_NO_MATCHING_KEY': return unauthorized('token signing key unknown')
    case 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED': return unauthorized('invalid token signature')
    case 'ERR_JWT_CLAIM_VALIDATION_FAILED': {
      const claim = (error as { claim?: string }).claim
      if (claim === 'iss') return unauthorized('token issuer not accepted')
      if (claim === 'aud') return unauthorized('token audience not accepted')
      if (claim === 'nbf') return unauthorized('token not yet valid')
      return unauthorized('invalid token claims')
    }
    default: return unauthorized('invalid token')
  }
}

function codeOf (error: unknown): string | undefined {
  return typeof error === 'object' && error !== null ? (error as { code?: string }).code : undefined
}

function describe (error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } })?.cause
  const message = error instanceof Error ? error.message : String(error)
  return cause?.code !== undefined ? `${message} (${cause.code})` : message
}

function discoveryUrl (issuer: string): string {
  return `${issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`
}

async function fetchJson (url: string, timeoutMs: number): Promise<unknown> {
  const response = await fetch(url, { signal: AbortSignal.timeout(timeoutMs), headers: { accept: 'application/json' } })
  if (!response.ok) throw new Error(`GET ${url} answered ${response.status}`)
  return response.json()
}

function parseMetadata (doc: unknown, issuer: string): ProviderMetadata {
  const d = (doc ?? {}) as Record<string, unknown>
  // OpenID Connect Discovery 1.0 §4.3: the document must name the issuer it was fetched for.
  if (d.issuer !== issuer) throw new Error(`discovery document names issuer ${JSON.stringify(d.issuer)}, expected ${issuer}`)
  if (typeof d.jwks_uri !== 'string') throw new Error('discovery document has no jwks_uri')
  const text = (value: unknown): string => (typeof value === 'string' ? value : '')
  return {
    issuer,
    jwks_uri: d.jwks_uri,
    authorization_endpoint: text(d.authorization_endpoint),
    token_endpoint: text(d.token_endpoint),
    device_authorization_endpoint: text(d.device_authorization_endpoint),
  }
}
