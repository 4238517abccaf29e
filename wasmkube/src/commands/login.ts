// login: the device flow at the identity provider the control plane publishes for sign-in.
import { saveTokens, tokenFile } from '@session-relay/login/token-store'
import type { ConsoleConfig } from '../api/types.js'
import { serverOf } from '../context.js'
import type { Io } from '../context.js'
import { createApi } from '../http.js'
import { TOKEN_FOLDER, deviceLogin } from '../login.js'
import { WasmkubeError } from '../errors.js'
import { parseCommand, stringOf } from '../table.js'

export async function loginCommand(args: string[], io: Io): Promise<number> {
  const parsed = parseCommand('login', args)
  const server = serverOf(parsed, io)
  const config = await createApi(server, () => Promise.resolve(undefined)).json<ConsoleConfig>('GET', '/console-config')
  if (config?.auth === null) {
    io.stderr.write(`${server} runs with authentication off: no login needed\n`)
    return 0
  }
  const clientId = stringOf(parsed, 'client-id') ?? config?.auth?.clientId ?? ''
  if (typeof config?.auth?.issuer !== 'string')
    throw new WasmkubeError('bad_answer', `${server}/api/v1/console-config names no identity provider`)
  if (clientId === '')
    throw new WasmkubeError(
      'login_failed',
      `${server} names no client id for sign-in (PLATFORM_CONSOLE_CLIENT_ID): pass --client-id`,
    )
  const scopes = config.auth.scopes.split(' ').includes('openid') ? config.auth.scopes : `openid ${config.auth.scopes}`
  const login = await deviceLogin({ issuer: config.auth.issuer, clientId, scopes }, (prompt) => {
    io.stderr.write(
      `To log in, open ${prompt.verification_uri_complete ?? prompt.verification_uri}\nand enter the code ${prompt.user_code} (valid ${Math.round(prompt.expires_in / 60)} min).\n`,
    )
  })
  const file = tokenFile(TOKEN_FOLDER, io.env)
  await saveTokens(file, server, login)
  io.stderr.write(`Logged in; tokens kept in ${file}\n`)
  if (login.refresh_token === undefined)
    io.stderr.write('The identity provider gave no refresh token: log in again when the token expires.\n')
  return 0
}
