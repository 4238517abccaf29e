// The device login and refresh of the shared @session-relay/login, at the identity provider the
// control plane names in its public /console-config. The API takes OpenID id tokens
// (docs/spec/control-plane.md §5), so the id token is what is kept, sent and refreshed; the
// failures become WasmkubeErrors that say to run wasmkube login.
import { deviceLogin as sharedDeviceLogin } from '@session-relay/login/device'
import type { DevicePrompt } from '@session-relay/login/device'
import { LoginError } from '@session-relay/login/errors'
import { discoverProvider } from '@session-relay/login/provider'
import { tokenSource } from '@session-relay/login/refresh'
import type { Tokens } from '@session-relay/login/tokens'
import { WasmkubeError } from './errors.js'

export type LoginSettings = { issuer: string; clientId: string; scopes: string }

/** The folder under $XDG_CONFIG_HOME (or ~/.config) that holds tokens.json. */
export const TOKEN_FOLDER = 'wasmkube'

export async function deviceLogin(settings: LoginSettings, onPrompt: (prompt: DevicePrompt) => void): Promise<Tokens> {
  return await wasmkubeErrors(async () =>
    sharedDeviceLogin({
      provider: await discoverProvider(settings.issuer, settings.clientId),
      clientId: settings.clientId,
      scope: settings.scopes,
      bearer: 'id_token',
      onPrompt,
    }),
  )
}

/** The stored login's id token, refreshed (and the fresh login handed to `onRefresh`) near its expiry. */
export function idTokenSource(login: Tokens, onRefresh: (fresh: Tokens) => Promise<void>): () => Promise<string> {
  const source = tokenSource(login, { bearer: 'id_token', onRefresh })
  return () => wasmkubeErrors(source)
}

async function wasmkubeErrors<T>(step: () => Promise<T>): Promise<T> {
  try {
    return await step()
  } catch (error) {
    if (!(error instanceof LoginError)) throw error
    const again = error.code === 'refused' || error.code === 'no_refresh_token'
    throw new WasmkubeError(
      again ? 'not_logged_in' : 'login_failed',
      again ? `${error.message}: run wasmkube login` : error.message,
      {
        cause: error,
      },
    )
  }
}
