// Login tokens on disk: one JSON file per command, mode 0600, keyed by the server's origin (a
// relay given as ws:// or wss:// under its http(s) origin, so both spellings share a login).
import { chmod, mkdir, readFile, rename, writeFile } from 'node:fs/promises'
import { homedir } from 'node:os'
import { dirname, join } from 'node:path'
import type { Tokens } from './tokens.js'

/** `$XDG_CONFIG_HOME/{folder}/tokens.json`, `~/.config/{folder}/tokens.json` without it. */
export function tokenFile(folder: string, env: NodeJS.ProcessEnv = process.env): string {
  const base =
    env.XDG_CONFIG_HOME !== undefined && env.XDG_CONFIG_HOME !== '' ? env.XDG_CONFIG_HOME : join(homedir(), '.config')
  return join(base, folder, 'tokens.json')
}

type Store = Record<string, Tokens>

async function readStore(file: string): Promise<Store> {
  try {
    return JSON.parse(await readFile(file, 'utf8')) as Store
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {}
    throw error
  }
}

export async function loadTokens(file: string, server: string): Promise<Tokens | undefined> {
  return (await readStore(file))[storeKey(server)]
}

export async function saveTokens(file: string, server: string, tokens: Tokens): Promise<void> {
  const store = await readStore(file)
  store[storeKey(server)] = tokens
  await mkdir(dirname(file), { recursive: true, mode: 0o700 })
  // Written aside then renamed, so a crash never leaves half a file; created 0600 so the
  // tokens are never readable by others, even for a moment.
  const temporary = `${file}.${process.pid}.tmp`
  await writeFile(temporary, `${JSON.stringify(store, null, 2)}\n`, { mode: 0o600 })
  await chmod(temporary, 0o600)
  await rename(temporary, file)
}

function storeKey(server: string): string {
  const url = new URL(server)
  if (url.protocol === 'ws:') url.protocol = 'http:'
  if (url.protocol === 'wss:') url.protocol = 'https:'
  return url.origin
}
