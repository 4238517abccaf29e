// Login tokens on disk: one JSON file, mode 0600, keyed by the control plane's origin.
import { chmod, mkdir, readFile, rename, writeFile } from 'node:fs/promises'
import { homedir } from 'node:os'
import { dirname, join } from 'node:path'

export type StoredLogin = {
  /** The id token, sent as the bearer token: the API checks its issuer, audience and expiry. */
  id_token: string
  refresh_token?: string
  /** Epoch milliseconds: the id token's exp. */
  expires_at?: number
  issuer: string
  token_endpoint: string
  client_id: string
}

export function tokenFile(env: NodeJS.ProcessEnv): string {
  const base =
    env.XDG_CONFIG_HOME !== undefined && env.XDG_CONFIG_HOME !== '' ? env.XDG_CONFIG_HOME : join(homedir(), '.config')
  return join(base, 'wasmkube', 'tokens.json')
}

async function readStore(file: string): Promise<Record<string, StoredLogin>> {
  try {
    return JSON.parse(await readFile(file, 'utf8')) as Record<string, StoredLogin>
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {}
    throw error
  }
}

export async function loadLogin(file: string, server: string): Promise<StoredLogin | undefined> {
  return (await readStore(file))[new URL(server).origin]
}

export async function saveLogin(file: string, server: string, login: StoredLogin): Promise<void> {
  const store = await readStore(file)
  store[new URL(server).origin] = login
  await mkdir(dirname(file), { recursive: true, mode: 0o700 })
  // Written aside then renamed, so a crash never leaves half a file; created 0600 so the
  // tokens are never readable by others, even for a moment.
  const temporary = `${file}.${process.pid}.tmp`
  await writeFile(temporary, `${JSON.stringify(store, null, 2)}\n`, { mode: 0o600 })
  await chmod(temporary, 0o600)
  await rename(temporary, file)
}
