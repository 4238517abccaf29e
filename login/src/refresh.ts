// New tokens from the refresh token, and a token function that refreshes them once they near
// expiry, so a command never sends a token the API is about to refuse.
import * as oauth from 'openid-client'
import { LoginError, oauthStep } from './errors.js'
import { configuration } from './provider.js'
import type { Bearer, Tokens } from './tokens.js'
import { bearerOf, tokensOf } from './tokens.js'

export type RefreshOptions = { clientSecret?: string; bearer?: Bearer; now?: () => number }

/** New tokens; throws `no_refresh_token` when there is none, `refused` when the provider refuses it. */
export async function refresh(tokens: Tokens, opts: RefreshOptions = {}): Promise<Tokens> {
  const refreshToken = tokens.refresh_token
  if (refreshToken === undefined)
    throw new LoginError('no_refresh_token', 'the login has expired and has no refresh token')
  const config = configuration(tokens, tokens.client_id, opts.clientSecret)
  const params = tokens.resource === undefined ? undefined : { resource: tokens.resource }
  const response = await oauthStep(() => oauth.refreshTokenGrant(config, refreshToken, params))
  const fresh = tokensOf(response, tokens, opts.bearer ?? 'access_token', opts.now ?? Date.now)
  // A provider that does not rotate refresh tokens sends none back: keep the one we had.
  return fresh.refresh_token === undefined ? { ...fresh, refresh_token: refreshToken } : fresh
}

export type TokenSourceOptions = RefreshOptions & {
  /** Given the refreshed tokens, to store them. */
  onRefresh?: (tokens: Tokens) => void | Promise<void>
  /** How long before expiry a token is refreshed; default 30 s. */
  marginMs?: number
}

/**
 * The bearer token while it has more than `marginMs` left, else a refreshed one. Calls at
 * the same time share one refresh: a rotated refresh token is good for one use only.
 */
export function tokenSource(initial: Tokens, opts: TokenSourceOptions = {}): () => Promise<string> {
  let current = initial
  let pending: Promise<Tokens> | null = null
  const now = opts.now ?? Date.now
  const margin = opts.marginMs ?? 30_000
  const bearer = opts.bearer ?? 'access_token'
  return async () => {
    if (current.expires_at === undefined || current.expires_at - margin > now()) return bearerOf(current, bearer)
    pending ??= refresh(current, opts)
      .then(async (fresh) => {
        current = fresh
        await opts.onRefresh?.(fresh)
        return fresh
      })
      .finally(() => {
        pending = null
      })
    return bearerOf(await pending, bearer)
  }
}
