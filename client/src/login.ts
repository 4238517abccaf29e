// RFC 8628 device login against the identity provider the relay's discovery document names
// (relay.md §5.3), and refresh with the refresh token: the shared @session-relay/login, asked
// for the relay's audience as the resource, its failures turned into RelayErrors.
import { LoginError } from '@session-relay/login/errors'
import { deviceLogin } from '@session-relay/login/device'
import type { DevicePrompt } from '@session-relay/login/device'
import * as shared from '@session-relay/login/refresh'
import type { Tokens } from '@session-relay/login/tokens'
import { RelayError } from './errors.js'
import type { RelayErrorCode } from './errors.js'
import type { Discovery } from './types.js'

export type { DevicePrompt, Tokens }

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
  // The provider's shortcoming first: a client id would not help.
  if (discovery.device_authorization_endpoint === '')
    throw new RelayError('bad_request', `the identity provider ${discovery.issuer} offers no device login`)
  const clientId = opts.clientId ?? discovery.client_id_hint
  if (clientId === '') throw new RelayError('bad_request', 'the relay names no client id (client_id_hint): pass one')
  return await relayErrors(() =>
    deviceLogin({
      provider: discovery,
      clientId,
      scope: (opts.scopes ?? [...discovery.scopes, 'offline_access']).join(' '),
      ...(discovery.audience === '' ? {} : { resource: discovery.audience }),
      onPrompt: opts.onPrompt,
      ...(opts.clientSecret === undefined ? {} : { clientSecret: opts.clientSecret }),
      ...(opts.signal === undefined ? {} : { signal: opts.signal }),
      ...(opts.now === undefined ? {} : { now: opts.now }),
    }),
  )
}

/** New tokens from the refresh token; throws `unauthorized` when there is none or it was refused. */
export async function refresh(
  tokens: Tokens,
  opts: { clientSecret?: string; now?: () => number } = {},
): Promise<Tokens> {
  return await relayErrors(() => shared.refresh(tokens, opts))
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
  const source = shared.tokenSource(initial, opts)
  return () => relayErrors(source)
}

const CODES: Record<LoginError['code'], RelayErrorCode> = {
  no_device_login: 'bad_request',
  denied: 'login_denied',
  expired: 'login_expired',
  refused: 'unauthorized',
  no_refresh_token: 'unauthorized',
  no_id_token: 'bad_request',
  network: 'network',
  provider: 'bad_request',
}

async function relayErrors<T>(step: () => Promise<T>): Promise<T> {
  try {
    return await step()
  } catch (error) {
    if (!(error instanceof LoginError)) throw error
    const hint = error.code === 'refused' || error.code === 'no_refresh_token' ? ': log in again' : ''
    throw new RelayError(CODES[error.code], `${error.message}${hint}`, { cause: error })
  }
}
