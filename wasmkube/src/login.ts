// RFC 8628 device login at the identity provider the control plane names in its public
// /console-config, and refresh. The API takes OpenID id tokens (docs/spec/control-plane.md §5),
// so the id token is what is kept and sent; openid-client does the OAuth.
import * as oauth from 'openid-client'
import { WasmkubeError } from './errors.js'
import type { StoredLogin } from './token-store.js'

export type LoginSettings = { issuer: string; clientId: string; scopes: string }

export type DevicePrompt = { verification_uri: string; user_code: string; expires_in: number }

export async function deviceLogin(
  settings: LoginSettings,
  onPrompt: (prompt: DevicePrompt) => void,
): Promise<StoredLogin> {
  const config = await wrap(() =>
    oauth.discovery(
      new URL(settings.issuer),
      settings.clientId,
      undefined,
      oauth.None(),
      loopbackOptions(settings.issuer),
    ),
  )
  if (config.serverMetadata().device_authorization_endpoint === undefined) {
    throw new WasmkubeError('login_failed', `the identity provider ${settings.issuer} offers no device login`)
  }
  const started = await wrap(() => oauth.initiateDeviceAuthorization(config, { scope: settings.scopes }))
  onPrompt({
    verification_uri: started.verification_uri_complete ?? started.verification_uri,
    user_code: started.user_code,
    expires_in: started.expires_in,
  })
  const response = await wrap(() => oauth.pollDeviceAuthorizationGrant(config, started))
  return loginOf(response, {
    issuer: settings.issuer,
    token_endpoint: config.serverMetadata().token_endpoint as string,
    client_id: settings.clientId,
  })
}

export async function refreshLogin(login: StoredLogin): Promise<StoredLogin> {
  if (login.refresh_token === undefined)
    throw new WasmkubeError('not_logged_in', 'the login has expired and has no refresh token: run wasmkube login')
  const config = new oauth.Configuration(
    { issuer: login.issuer, token_endpoint: login.token_endpoint },
    login.client_id,
    undefined,
    oauth.None(),
  )
  if (isLoopback(login.token_endpoint)) oauth.allowInsecureRequests(config)
  const response = await wrap(() => oauth.refreshTokenGrant(config, login.refresh_token as string))
  const fresh = loginOf(response, login)
  // A provider that does not rotate refresh tokens sends none back: keep the one we had.
  return fresh.refresh_token === undefined ? { ...fresh, refresh_token: login.refresh_token } : fresh
}

function loginOf(
  response: oauth.TokenEndpointResponse,
  base: Pick<StoredLogin, 'issuer' | 'token_endpoint' | 'client_id'>,
): StoredLogin {
  if (response.id_token === undefined)
    throw new WasmkubeError('login_failed', 'the identity provider sent no id token: the scopes must include openid')
  const exp = expiryOf(response.id_token)
  return {
    ...base,
    id_token: response.id_token,
    ...(response.refresh_token === undefined ? {} : { refresh_token: response.refresh_token }),
    ...(exp === undefined ? {} : { expires_at: exp * 1000 }),
  }
}

function expiryOf(jwt: string): number | undefined {
  try {
    const claims = JSON.parse(Buffer.from(jwt.split('.')[1] ?? '', 'base64url').toString('utf8')) as { exp?: unknown }
    return typeof claims.exp === 'number' ? claims.exp : undefined
  } catch {
    return undefined
  }
}

// Plain http only to a provider on this machine (development and tests).
function loopbackOptions(issuer: string): { execute: Array<(config: oauth.Configuration) => void> } | undefined {
  return isLoopback(issuer) ? { execute: [oauth.allowInsecureRequests] } : undefined
}

function isLoopback(url: string): boolean {
  const { protocol, hostname } = new URL(url)
  return protocol === 'http:' && (hostname === '127.0.0.1' || hostname === 'localhost' || hostname === '[::1]')
}

async function wrap<T>(step: () => Promise<T>): Promise<T> {
  try {
    return await step()
  } catch (error) {
    const oauthError = (error as { error?: unknown }).error
    if (oauthError === 'access_denied')
      throw new WasmkubeError('login_failed', 'the login was refused', { cause: error })
    if (oauthError === 'expired_token')
      throw new WasmkubeError('login_failed', 'the login code expired before it was approved: try again', {
        cause: error,
      })
    if (oauthError === 'invalid_grant')
      throw new WasmkubeError('not_logged_in', 'the identity provider refused the refresh token: run wasmkube login', {
        cause: error,
      })
    throw new WasmkubeError('login_failed', `identity provider: ${(error as Error).message}`, { cause: error })
  }
}
