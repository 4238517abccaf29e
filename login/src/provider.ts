// The identity provider's endpoints, given (the relay's discovery document names them) or read
// from its OpenID discovery document (the control plane names only the issuer), and the
// openid-client configuration for them.
import * as oauth from 'openid-client'
import { LoginError, oauthStep } from './errors.js'

export type Provider = {
  issuer: string
  token_endpoint: string
  /** Empty or absent: the provider offers no device login. */
  device_authorization_endpoint?: string
}

/** The endpoints from `{issuer}/.well-known/openid-configuration`. */
export async function discoverProvider(issuer: string, clientId: string): Promise<Provider> {
  const config = await oauthStep(() =>
    oauth.discovery(
      new URL(issuer),
      clientId,
      undefined,
      oauth.None(),
      isLoopback(issuer) ? { execute: [oauth.allowInsecureRequests] } : undefined,
    ),
  )
  const metadata = config.serverMetadata()
  if (metadata.token_endpoint === undefined)
    throw new LoginError('provider', `the identity provider ${issuer} names no token endpoint`)
  return {
    issuer,
    token_endpoint: metadata.token_endpoint,
    ...(metadata.device_authorization_endpoint === undefined
      ? {}
      : { device_authorization_endpoint: metadata.device_authorization_endpoint }),
  }
}

export function configuration(provider: Provider, clientId: string, secret: string | undefined): oauth.Configuration {
  const device = provider.device_authorization_endpoint
  const config = new oauth.Configuration(
    {
      issuer: provider.issuer,
      token_endpoint: provider.token_endpoint,
      ...(device === undefined || device === '' ? {} : { device_authorization_endpoint: device }),
    },
    clientId,
    undefined,
    secret === undefined ? oauth.None() : oauth.ClientSecretBasic(secret),
  )
  // Plain http only to a provider on this machine (development and tests).
  if (isLoopback(provider.token_endpoint)) oauth.allowInsecureRequests(config)
  return config
}

function isLoopback(url: string): boolean {
  const { protocol, hostname } = new URL(url)
  return protocol === 'http:' && (hostname === '127.0.0.1' || hostname === 'localhost' || hostname === '[::1]')
}
