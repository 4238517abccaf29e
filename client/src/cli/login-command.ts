// relay login: the device flow, tokens stored for the relay.
import { parseArgs } from 'node:util'
import { discover } from '../discover.js'
import { RelayError } from '../errors.js'
import { login } from '../login.js'
import type { Io } from './context.js'
import { serverOf } from './context.js'
import { saveTokens, tokenFile } from '@session-relay/login/token-store'
import { HELP, UsageError } from './usage.js'

export async function loginCommand(args: string[], io: Io): Promise<number> {
  const { values } = parse(args)
  const server = values['issuer-from'] ?? serverOf(values.server, io, HELP.login as string)
  const discovery = await discover(server)
  if (discovery === null) {
    io.stderr.write(`${server} runs with auth disabled: no login needed\n`)
    return 0
  }
  const tokens = await login({
    discovery,
    ...(values['client-id'] === undefined ? {} : { clientId: values['client-id'] }),
    onPrompt: (prompt) => {
      io.stderr.write(
        `To log in, open ${prompt.verification_uri_complete ?? prompt.verification_uri}\nand enter the code ${prompt.user_code} (valid ${Math.round(prompt.expires_in / 60)} min).\n`,
      )
    },
  })
  const file = tokenFile('session-relay', io.env)
  await saveTokens(file, values.server ?? server, tokens)
  if (values['issuer-from'] !== undefined && values.server !== undefined && values.server !== server) {
    await saveTokens(file, server, tokens)
  }
  io.stderr.write(`Logged in; tokens kept in ${file}\n`)
  if (tokens.refresh_token === undefined)
    io.stderr.write('The identity provider gave no refresh token: log in again when the token expires.\n')
  return 0
}

function parse(args: string[]) {
  try {
    return parseArgs({
      args,
      options: { server: { type: 'string' }, 'issuer-from': { type: 'string' }, 'client-id': { type: 'string' } },
      strict: true,
    })
  } catch (error) {
    if (error instanceof RelayError) throw error
    throw new UsageError((error as Error).message, HELP.login as string)
  }
}
