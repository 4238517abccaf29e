// RFC 8628 device login against the identity provider the relay's discovery document names
// (relay.md §5.3), and refresh with the refresh token. openid-client does the OAuth: polling
// with `interval`, `slow_down` (+5 s), `authorization_pending`; we map the two ways a login
// ends without tokens to RelayErrors.
import * as oauth from 'openid-client'
import { RelayError } from './errors.js'
import type { Discovery } from './types.js'

/** What a login keeps: enough to refresh later without the discovery document. */
export type Tokens = {
  access_token: string
  refresh_token?: string
  /** Epoch milliseconds; absent when the provider said nothing. */
  expires_at?: number
  issuer: string
  token_endpoint: string
  client_id: string
  scope?: string
  /** The relay's audience, asked for as the RFC 8707 resource on every token request. */
  resource?: string
}

export type DevicePrompt = {
  verification_uri: string
  verification_uri_complete?: string
  user_code: string
  expires_in: number
}

export type LoginOptions = {
  discovery: Discovery
  /** The OAuth client id; defaults to the discovery document's client_id_hint. */
  clientId?: string
  /** Only for a confidential client (the relay's shared one is public). */
  clientSecret?: string
  /** Scopes to ask for; defaults to the discovery document's scopes and offline_access. */
  scopes?: string[]
  /** Show the user where to go and which code to enter. */
  onPrompt: (prompt: DevicePrompt) => void
  signal?: AbortSignal
  now?: () => number
}

export async function login(opts: LoginOptions): Promise<Tokens> {
  const { discovery } = opts
  if (discovery.device_authorization_endpoint === '') {
    throw new RelayError('bad_request', `the identity provider ${discovery.issuer} offers no device login`)
  }
  const clientId = opts.clientId ?? discovery.client_id_hint
  if (clientId === '') throw new RelayError('bad_request', 'the relay names no client id (client_id_hint): pass one')
  const config = configuration(
    discovery.issuer,
    discovery.token_endpoint,
    clientId,
    opts.clientSecret,
    discovery.device_authorization_endpoint,
  )
  const scope = (opts.scopes ?? [...discovery.scopes, 'offline_access']).join(' ')
  const params: Record<string, string> = { scope }
  if (discovery.audience !== '') params.resource = discovery.audience
  const started = await wrap(() => oauth.initiateDeviceAuthorization(config, params))
  opts.onPrompt({
    verification_uri: started.verification_uri,
    ...(started.verification_uri_complete === undefined
      ? {}
      : { verification_uri_complete: started.verification_uri_complete }),
    user_code: started.user_code,
    expires_in: started.expires_in,
  })
  // The resource again at the token endpoint: a provider with resource indicators issues the
  // access token (a JWT for the relay) only for the resource named there.
  const tokenParams = discovery.audience === '' ? undefined : { resource: discovery.audience }
  const response = await wrap(() =>
    oauth.pollDeviceAuthorizationGrant(
      config,
      started,
      tokenParams,
      opts.signal === undefined ? undefined : { signal: opts.signal },
    ),
  )
  const base = {
    issuer: discovery.issuer,
    token_endpoint: discovery.token_endpoint,
    client_id: clientId,
    ...(discovery.audience === '' ? {} : { resource: discovery.audience }),
  }
  return tokensOf(response, base, opts.now ?? Date.now)
}

/** New tokens from the refresh token; throws `unauthorized` when there is none or it was refused. */
export async function refresh(
  tokens: Tokens,
  opts: { clientSecret?: string; now?: () => number } = {},
): Promise<Tokens> {
  if (tokens.refresh_token === undefined)
    throw new RelayError('unauthorized', 'the login has expired and has no refresh token: log in again')
  const config = configuration(tokens.issuer, tokens.token_endpoint, tokens.client_id, opts.clientSecret)
  const params = tokens.resource === undefined ? undefined : { resource: tokens.resource }
  const response = await wrap(() => oauth.refreshTokenGrant(config, tokens.refresh_token as string, params))
  const fresh = tokensOf(response, tokens, opts.now ?? Date.now)
  // A provider that does not rotate refresh tokens sends none back: keep the one we had.
  return fresh.refresh_token === undefined ? { ...fresh, refresh_token: tokens.refresh_token } : fresh
}

/**
 * A token function for the admin client: the stored access token while it has more than
 * `marginMs` left, else a refreshed one (handed to `onRefresh` to be stored).
 */
export function tokenSource(
  initial: Tokens,
  opts: {
    onRefresh?: (tokens: Tokens) => void | Promise<void>
    marginMs?: number
    clientSecret?: string
    now?: () => number
  } = {},
): () => Promise<string> {
  let current = initial
  let pending: Promise<Tokens> | null = null
  const now = opts.now ?? Date.now
  const margin = opts.marginMs ?? 30_000
  return async () => {
    if (current.expires_at === undefined || current.expires_at - margin > now()) return current.access_token
    pending ??= refresh(current, opts)
      .then(async (fresh) => {
        current = fresh
        await opts.onRefresh?.(fresh)
        return fresh
      })
      .finally(() => {
        pending = null
      })
    return (await pending).access_token
  }
}

function configuration(
  issuer: string,
  tokenEndpoint: string,
  clientId: string,
  secret: string | undefined,
  deviceEndpoint?: string,
): oauth.Configuration {
  const config = new oauth.Configuration(
    {
      issuer,
      token_endpoint: tokenEndpoint,
      ...(deviceEndpoint === undefined ? {} : { device_authorization_endpoint: deviceEndpoint }),
    },
    clientId,
    undefined,
    secret === undefined ? oauth.None() : oauth.ClientSecretBasic(secret),
  )
  // Plain http only to a provider on this machine (development and tests).
  if (isLoopback(tokenEndpoint)) oauth.allowInsecureRequests(config)
  return config
}

function isLoopback(url: string): boolean {
  const { protocol, hostname } = new URL(url)
  return protocol === 'http:' && (hostname === '127.0.0.1' || hostname === 'localhost' || hostname === '[::1]')
}

function tokensOf(
  response: oauth.TokenEndpointResponse,
  base: Pick<Tokens, 'issuer' | 'token_endpoint' | 'client_id' | 'resource'>,
  now: () => number,
): Tokens {
  return {
    issuer: base.issuer,
    token_endpoint: base.token_endpoint,
    client_id: base.client_id,
    ...(base.resource === undefined ? {} : { resource: base.resource }),
    access_token: response.access_token,
    ...(response.refresh_token === undefined ? {} : { refresh_token: response.refresh_token }),
    ...(response.expires_in === undefined ? {} : { expires_at: now() + response.expires_in * 1000 }),
    ...(response.scope === undefined ? {} : { scope: response.scope }),
  }
}

async function wrap<T>(step: () => Promise<T>): Promise<T> {
  try {
    return await step()
  } catch (error) {
    const oauthError = (error as { error?: unknown }).error
    if (oauthError === 'access_denied') throw new RelayError('login_denied', 'the login was refused', { cause: error })
    if (oauthError === 'expired_token')
      throw new RelayError('login_expired', 'the login code expired before it was approved: try again', {
        cause: error,
      })
    if (oauthError === 'invalid_grant')
      throw new RelayError('unauthorized', 'the identity provider refused the token: log in again', { cause: error })
    if (error instanceof TypeError || (error as { code?: unknown }).code === 'OAUTH_RESPONSE_IS_NOT_CONFORM')
      throw new RelayError('network', `identity provider: ${(error as Error).message}`, { cause: error })
    throw new RelayError('bad_request', `identity provider: ${(error as Error).message}`, { cause: error })
  }
}
