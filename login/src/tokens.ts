// What a login keeps: the tokens and enough of the provider to refresh them later without any
// discovery document. The relay takes the access token (a JWT for its audience), the control
// plane the OpenID id token; `bearer` says which one a command sends, and `expires_at` is
// that token's expiry.
import type * as oauth from 'openid-client'
import { LoginError } from './errors.js'

export type Tokens = {
  access_token: string
  /** Present when the scopes included openid. */
  id_token?: string
  refresh_token?: string
  /** Epoch milliseconds: when the bearer token expires; absent when the provider said nothing. */
  expires_at?: number
  issuer: string
  token_endpoint: string
  client_id: string
  scope?: string
  /** The API's audience, asked for as the RFC 8707 resource on every token request. */
  resource?: string
}

export type Bearer = 'access_token' | 'id_token'

export type Base = Pick<Tokens, 'issuer' | 'token_endpoint' | 'client_id' | 'resource'>

export function tokensOf(response: oauth.TokenEndpointResponse, base: Base, bearer: Bearer, now: () => number): Tokens {
  if (bearer === 'id_token' && response.id_token === undefined)
    throw new LoginError('no_id_token', 'the identity provider sent no id token: the scopes must include openid')
  const expiresAt =
    bearer === 'id_token'
      ? expiryOf(response.id_token as string)
      : response.expires_in === undefined
        ? undefined
        : now() + response.expires_in * 1000
  return {
    issuer: base.issuer,
    token_endpoint: base.token_endpoint,
    client_id: base.client_id,
    ...(base.resource === undefined ? {} : { resource: base.resource }),
    access_token: response.access_token,
    ...(response.id_token === undefined ? {} : { id_token: response.id_token }),
    ...(response.refresh_token === undefined ? {} : { refresh_token: response.refresh_token }),
    ...(expiresAt === undefined ? {} : { expires_at: expiresAt }),
    ...(response.scope === undefined ? {} : { scope: response.scope }),
  }
}

/** The token a command sends; a login kept without it (an id token never given) cannot be used. */
export function bearerOf(tokens: Tokens, bearer: Bearer): string {
  const token = tokens[bearer]
  if (token === undefined) throw new LoginError('no_id_token', 'the stored login has no id token: log in again')
  return token
}

/** A JWT's exp in epoch milliseconds; the id token is read, not verified: the API verifies it. */
function expiryOf(jwt: string): number | undefined {
  try {
    const claims = JSON.parse(Buffer.from(jwt.split('.')[1] ?? '', 'base64url').toString('utf8')) as { exp?: unknown }
    return typeof claims.exp === 'number' ? claims.exp * 1000 : undefined
  } catch {
    return undefined
  }
}
