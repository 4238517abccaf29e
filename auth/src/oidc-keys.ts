// What both processes need to verify JWTs from an OpenID provider: the discovery document and
// the key set it points at, cached for as long as the provider's Cache-Control allows (within a
// floor and a ceiling), refreshed early (rate-limited) when a token names an unknown key, and
// retried in the background while the provider cannot be reached; plus the verification of an
// `Authorization: Bearer` JWT against them. What a valid token may then do (scopes,
// claims) is each process's own business.
import { createLocalJWKSet, jwtVerify } from 'jose'
import type { FlattenedJWSInput, JSONWebKeySet, JWSHeaderParameters, JWTPayload } from 'jose'

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

type KeySet = ReturnType<typeof createLocalJWKSet>
type KeyResolver = (header: JWSHeaderParameters, token: FlattenedJWSInput) => ReturnType<KeySet>

/** The subset of a pino logger this module writes to. */
export type OidcLogger = {
  info(details: object, message: string): void
  warn(details: object, message: string): void
}

export type OidcKeysOptions = {
  issuer: string
  logger: OidcLogger
  /** Every fetch from the provider gives up after this long. */
  fetchTimeoutMs?: number
  /** At most one key refresh per this long, however many unknown `kid`s arrive. */
  refreshCooldownMs?: number
  /** While the provider is unreachable, retry in the background this often. */
  retryMs?: number
  /** The key set is refetched no sooner than this after a fetch, whatever its max-age says. */
  minRefreshMs?: number
  /** ... and no later than this, whatever its max-age says: how long a withdrawn key can stay trusted. */
  maxRefreshMs?: number
  /** The clock (ms) of the refresh schedule, the cooldown and tokens' exp and nbf; tests move it instead of sleeping. */
  now?: () => number
}

export type OidcKeys = {
  issuer: string
  /** Tokens this process already verified; see verifyBearer. Cleared whenever the keys change. */
  verified: Map<string, VerifiedToken>
  /** A jose key resolver; rejects with IdpUnavailableError when no keys can be had. */
  getKey: KeyResolver
  /**
   * Refetch the keys when they are past their refresh time, waiting for it; never rejects: a
   * failed refresh keeps the last good keys and is tried again a minimum refresh later.
   */
  revalidate(): Promise<void>
  /** The discovery document (its issuer checked); rejects with IdpUnavailableError while it cannot be fetched. */
  discovery(): Promise<Record<string, unknown>>
  /** The clock (ms since the epoch) for the key schedule and for tokens' exp and nbf: injectable, so tests need not wait. */
  now: () => number
  close(): void
}

export function createOidcKeys(opts: OidcKeysOptions): OidcKeys {
  const fetchTimeoutMs = opts.fetchTimeoutMs ?? 5_000
  const refreshCooldownMs = opts.refreshCooldownMs ?? 5_000
  const retryMs = opts.retryMs ?? 5_000
  const minRefreshMs = opts.minRefreshMs ?? 60_000
  const maxRefreshMs = Math.max(minRefreshMs, opts.maxRefreshMs ?? 3_600_000)
  const now = opts.now ?? Date.now
  const { issuer, logger } = opts

  const verified = new Map<string, VerifiedToken>()
  let document: Record<string, unknown> | null = null
  let keys: KeySet | null = null
  let lastAttempt = -Infinity
  /** When the keys must be fetched again (on the `now` clock). */
  let staleAt = Infinity
  let inFlight: Promise<KeySet> | null = null
  let available = true
  let retryTimer: NodeJS.Timeout | null = null

  /** Fetch the discovery document, then the keys it points at. One fetch at a time. */
  function refresh(): Promise<KeySet> {
    if (inFlight !== null) return inFlight
    lastAttempt = now()
    inFlight = (async () => {
      try {
        const fresh = checkDiscovery((await fetchJson(discoveryUrl(issuer), fetchTimeoutMs)).body, issuer)
        const { body, headers } = await fetchJson(fresh.jwks_uri as string, fetchTimeoutMs)
        const jwks = body as JSONWebKeySet
        if (!Array.isArray(jwks?.keys)) throw new Error('JWKS without a keys array')
        document = fresh
        keys = createLocalJWKSet(jwks)
        staleAt = lastAttempt + refreshAfter(headers, minRefreshMs, maxRefreshMs)
        // A key the provider withdrew must not keep vouching for tokens it signed.
        verified.clear()
        if (!available) logger.info({ issuer }, 'identity provider reachable again')
        available = true
        return keys
      } catch (error) {
        // The last good keys stay in use: an outage of the provider must not lock everyone out.
        // Their next refresh is a minimum refresh away, so an outage costs one wait per floor,
        // not one per request.
        if (keys !== null) staleAt = lastAttempt + minRefreshMs
        if (available) {
          const message =
            keys === null
              ? 'identity provider unavailable'
              : 'identity provider unavailable; keeping the last good signing keys'
          logger.warn({ issuer, err: describe(error) }, message)
        }
        available = false
        throw new IdpUnavailableError('identity provider unavailable', { cause: error })
      } finally {
        inFlight = null
      }
    })()
    return inFlight
  }

  async function currentKeys(): Promise<KeySet> {
    if (keys !== null) return keys
    // Not loaded yet: try again, but not more than once per cooldown while it keeps failing.
    if (inFlight === null && now() - lastAttempt < Math.min(refreshCooldownMs, 1_000)) {
      throw new IdpUnavailableError('identity provider unavailable')
    }
    return refresh()
  }

  function retryUntilLoaded(): void {
    refresh().catch(() => {
      retryTimer = setTimeout(retryUntilLoaded, retryMs)
      retryTimer.unref()
    })
  }
  retryUntilLoaded()

  async function getKey(header: JWSHeaderParameters, token: FlattenedJWSInput): ReturnType<KeySet> {
    const set = await currentKeys()
    try {
      return await set(header, token)
    } catch (error) {
      // A key not seen yet: the provider may have rotated. Refresh, rate-limited; joining a
      // refresh already in flight costs no fetch, so it is never refused.
      if (codeOf(error) !== 'ERR_JWKS_NO_MATCHING_KEY') throw error
      if (inFlight === null && now() - lastAttempt < refreshCooldownMs) throw error
      return (await refresh())(header, token)
    }
  }

  async function revalidate(): Promise<void> {
    // A key the provider withdrew stays in the set until it is fetched again: without this a
    // revoked key would vouch for tokens until the next unknown kid or restart.
    // Fresh keys wait for nothing, not even an unknown-kid refresh in flight; due keys join it.
    if (keys === null || now() < staleAt) return
    await refresh().catch(() => {})
  }

  async function discovery(): Promise<Record<string, unknown>> {
    await currentKeys()
    return document as Record<string, unknown>
  }

  function close(): void {
    if (retryTimer !== null) clearTimeout(retryTimer)
  }

  return { issuer, verified, getKey, revalidate, discovery, now, close }
}

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

type VerifiedToken = { payload: JWTPayload; audience: string; until: number }

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

function codeOf(error: unknown): string | undefined {
  return typeof error === 'object' && error !== null ? (error as { code?: string }).code : undefined
}

function describe(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } })?.cause
  const message = error instanceof Error ? error.message : String(error)
  return cause?.code !== undefined ? `${message} (${cause.code})` : message
}

function discoveryUrl(issuer: string): string {
  return `${issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`
}

async function fetchJson(url: string, timeoutMs: number): Promise<{ body: unknown; headers: Headers }> {
  const response = await fetch(url, { signal: AbortSignal.timeout(timeoutMs), headers: { accept: 'application/json' } })
  if (!response.ok) throw new Error(`GET ${url} answered ${response.status}`)
  return { body: await response.json(), headers: response.headers }
}

/**
 * How long a fetched key set stays fresh: what its Cache-Control max-age (less any Age a cache
 * added) says, within [min, max]. Without a max-age the ceiling: the provider did not ask for
 * more. no-store and no-cache ask for every use, which the floor turns into once per floor.
 */
function refreshAfter(headers: Headers, minMs: number, maxMs: number): number {
  const directives = (headers.get('cache-control') ?? '')
    .toLowerCase()
    .split(',')
    .map((d) => d.trim())
  let freshMs = maxMs
  if (directives.includes('no-store') || directives.includes('no-cache')) {
    freshMs = 0
  } else {
    const maxAge = directives.map((d) => /^max-age="?([0-9]+)"?$/.exec(d)).find((m) => m !== null)
    if (maxAge != null) {
      const age = Number(/^[0-9]+$/.exec(headers.get('age') ?? '')?.[0] ?? 0)
      freshMs = Math.max(0, Number(maxAge[1]) - age) * 1000
    }
  }
  return Math.min(maxMs, Math.max(minMs, freshMs))
}

function checkDiscovery(doc: unknown, issuer: string): Record<string, unknown> {
  const d = (typeof doc === 'object' && doc !== null ? doc : {}) as Record<string, unknown>
  // OpenID Connect Discovery 1.0 §4.3: the document must name the issuer it was fetched for.
  if (d.issuer !== issuer)
    throw new Error(`discovery document names issuer ${JSON.stringify(d.issuer)}, expected ${issuer}`)
  if (typeof d.jwks_uri !== 'string') throw new Error('discovery document has no jwks_uri')
  return d
}
