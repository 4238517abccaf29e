// How a login or a refresh ends without tokens, as a stable `code`. Each command maps it onto
// its own error class (RelayError, WasmkubeError) and adds its own "log in again" hint.

export type LoginErrorCode =
  | 'no_device_login' // the provider offers no device authorization endpoint
  | 'denied' // the user refused the login
  | 'expired' // the device code expired before it was approved
  | 'refused' // the provider refused a grant (a refresh token revoked, rotated or forged)
  | 'no_refresh_token' // the login has expired and cannot be refreshed
  | 'no_id_token' // the login must keep an id token and the provider sent none
  | 'network' // no answer, or not an OAuth one, from the provider
  | 'provider' // any other refusal from the provider

export class LoginError extends Error {
  readonly code: LoginErrorCode

  constructor(code: LoginErrorCode, message: string, opts: { cause?: unknown } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause })
    this.name = 'LoginError'
    this.code = code
  }
}

/** Runs one OAuth step, its failures turned into LoginErrors. */
export async function oauthStep<T>(step: () => Promise<T>): Promise<T> {
  try {
    return await step()
  } catch (error) {
    if (error instanceof LoginError) throw error
    const oauthError = (error as { error?: unknown }).error
    if (oauthError === 'access_denied') throw new LoginError('denied', 'the login was refused', { cause: error })
    if (oauthError === 'expired_token')
      throw new LoginError('expired', 'the login code expired before it was approved: try again', { cause: error })
    if (oauthError === 'invalid_grant')
      throw new LoginError('refused', 'the identity provider refused the refresh token', { cause: error })
    if (error instanceof TypeError || (error as { code?: unknown }).code === 'OAUTH_RESPONSE_IS_NOT_CONFORM')
      throw new LoginError('network', `identity provider: ${(error as Error).message}`, { cause: error })
    throw new LoginError('provider', `identity provider: ${(error as Error).message}`, { cause: error })
  }
}
