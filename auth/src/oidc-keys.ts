// What both processes need to verify JWTs from an OpenID provider: the discovery document and
// the key set it points at, cached for as long as the provider's Cache-Control allows (within a
// floor and a ceiling), refreshed early (rate-limited) when a token names an unknown key, and
// retried in the background while the provider cannot be reached. The verification of a token
// against them is verify-bearer.ts.
import { createLocalJWKSet } from 'jose'
import type { FlattenedJWSInput, JSONWebKeySet, JWSHeaderParameters, JWTPayload } from 'jose'
import { IdpUnavailableError, codeOf } from './token-errors.js'

/** A token verified before, trusted `until` (ms) for `audience`: see verify-bearer.ts. */
export type VerifiedToken = { payload: JWTPayload; audience: string; until: number }

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
