// What every command needs: the relay's URL, output streams, and an admin client that logs in
// from the stored tokens (refreshing them silently) or goes without against a no-auth relay.
import { adminClient } from '../admin.js'
import type { AdminClient } from '../admin.js'
import { discover } from '../discover.js'
import { RelayError } from '../errors.js'
import { tokenSource } from '../login.js'
import { loadTokens, saveTokens, tokenFile } from '@session-relay/login/token-store'
import { UsageError } from './usage.js'

export type Io = {
  stdin: NodeJS.ReadableStream & { isTTY?: boolean }
  stdout: NodeJS.WritableStream & { isTTY?: boolean }
  stderr: NodeJS.WritableStream & { isTTY?: boolean }
  env: NodeJS.ProcessEnv
}

export function serverOf(flag: string | undefined, io: Io, help: string): string {
  const server = flag ?? io.env.RELAY_SERVER
  if (server === undefined || server === '')
    throw new UsageError('no relay given: pass --server URL or set RELAY_SERVER', help)
  try {
    return new URL(server).href
  } catch {
    throw new UsageError(`--server: not a URL: ${server}`, help)
  }
}

export async function adminFor(server: string, io: Io): Promise<AdminClient> {
  const discovery = await discover(server)
  if (discovery === null) return adminClient({ server })
  const file = tokenFile('session-relay', io.env)
  const tokens = await loadTokens(file, server)
  if (tokens === undefined)
    throw new RelayError('not_logged_in', `not logged in to ${server}: run "relay login --server ${server}"`)
  return adminClient({ server, token: tokenSource(tokens, { onRefresh: (fresh) => saveTokens(file, server, fresh) }) })
}
