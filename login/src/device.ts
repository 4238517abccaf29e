// RFC 8628 device login: openid-client does the OAuth (polling with `interval`, `slow_down`
// adding 5 s, waiting through `authorization_pending`); the ways it ends without tokens are
// LoginErrors.
import * as oauth from 'openid-client'
import { LoginError, oauthStep } from './errors.js'
import type { Provider } from './provider.js'
import { configuration } from './provider.js'
import type { Bearer, Tokens } from './tokens.js'
import { tokensOf } from './tokens.js'

export type DevicePrompt = {
  verification_uri: string
  verification_uri_complete?: string
  user_code: string
  expires_in: number
}

export type DeviceLoginOptions = {
  provider: Provider
  clientId: string
  /** Only for a confidential client (the shared CLI clients are public). */
  clientSecret?: string
  /** Space-separated, as sent. */
  scope: string
  /** The API's audience as the RFC 8707 resource, when the provider must mint a token for it. */
  resource?: string
  /** Which token the command sends (and whose expiry is kept); default the access token. */
  bearer?: Bearer
  /** Show the user where to go and which code to enter. */
  onPrompt: (prompt: DevicePrompt) => void
  signal?: AbortSignal
  now?: () => number
}

export async function deviceLogin(opts: DeviceLoginOptions): Promise<Tokens> {
  const { provider } = opts
  if (provider.device_authorization_endpoint === undefined || provider.device_authorization_endpoint === '')
    throw new LoginError('no_device_login', `the identity provider ${provider.issuer} offers no device login`)
  const config = configuration(provider, opts.clientId, opts.clientSecret)
  const params: Record<string, string> = { scope: opts.scope }
  if (opts.resource !== undefined) params.resource = opts.resource
  const started = await oauthStep(() => oauth.initiateDeviceAuthorization(config, params))
  opts.onPrompt({
    verification_uri: started.verification_uri,
    ...(started.verification_uri_complete === undefined
      ? {}
      : { verification_uri_complete: started.verification_uri_complete }),
    user_code: started.user_code,
    expires_in: started.expires_in,
  })
  // The resource again at the token endpoint: a provider with resource indicators issues the
  // access token (a JWT for the API) only for the resource named there.
  const tokenParams = opts.resource === undefined ? undefined : { resource: opts.resource }
  const response = await oauthStep(() =>
    oauth.pollDeviceAuthorizationGrant(
      config,
      started,
      tokenParams,
      opts.signal === undefined ? undefined : { signal: opts.signal },
    ),
  )
  const base = {
    issuer: provider.issuer,
    token_endpoint: provider.token_endpoint,
    client_id: opts.clientId,
    ...(opts.resource === undefined ? {} : { resource: opts.resource }),
  }
  return tokensOf(response, base, opts.bearer ?? 'access_token', opts.now ?? Date.now)
}
