// What every server command needs: the control plane's URL and an API client whose bearer token
// comes from --token-file, WASMKUBE_TOKEN, or the stored login (refreshed when near expiry).
import { readFile } from 'node:fs/promises'
import { UsageError, WasmkubeError } from './errors.js'
import { createApi } from './http.js'
import type { Api } from './http.js'
import { TOKEN_FOLDER, idTokenSource } from './login.js'
import type { Parsed } from './table.js'
import { stringOf } from './table.js'
import { loadTokens, saveTokens, tokenFile } from '@session-relay/login/token-store'

export type Io = {
  stdout: NodeJS.WritableStream
  stderr: NodeJS.WritableStream
  env: NodeJS.ProcessEnv
  /** Aborted on Ctrl-C, for commands that follow a stream. */
  signal?: AbortSignal
}

const DEFAULT_SERVER = 'http://127.0.0.1:8081'
const MAX_TOKEN_FILE_BYTES = 64 * 1024

export function serverOf(parsed: Parsed, io: Io): string {
  const server =
    stringOf(parsed, 'server') ?? (io.env.WASMKUBE_SERVER === '' ? undefined : io.env.WASMKUBE_SERVER) ?? DEFAULT_SERVER
  let url: URL
  try {
    url = new URL(server)
  } catch {
    throw new UsageError(`--server: not a URL: ${server}`)
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new UsageError(`--server: not an http(s) URL: ${server}`)
  return url.href.replace(/\/+$/, '')
}

export async function apiFor(parsed: Parsed, io: Io): Promise<Api> {
  const server = serverOf(parsed, io)
  const file = stringOf(parsed, 'token-file')
  if (file !== undefined) {
    const token = await readTokenFile(file)
    return createApi(server, () => Promise.resolve(token))
  }
  const fromEnv = io.env.WASMKUBE_TOKEN
  if (fromEnv !== undefined && fromEnv.trim() !== '') return createApi(server, () => Promise.resolve(fromEnv.trim()))
  const store = tokenFile(TOKEN_FOLDER, io.env)
  const login = await loadTokens(store, server)
  // No login: the request goes without a token, and a server with auth answers 401 with a hint.
  if (login === undefined) return createApi(server, () => Promise.resolve(undefined))
  return createApi(
    server,
    idTokenSource(login, (fresh) => saveTokens(store, server, fresh)),
  )
}

async function readTokenFile(file: string): Promise<string> {
  let text: string
  try {
    const bytes = await readFile(file)
    if (bytes.byteLength > MAX_TOKEN_FILE_BYTES)
      throw new WasmkubeError('local', `--token-file ${file}: larger than ${MAX_TOKEN_FILE_BYTES} bytes, not a token`)
    text = bytes.toString('utf8').trim()
  } catch (error) {
    if (error instanceof WasmkubeError) throw error
    throw new WasmkubeError('local', `--token-file ${file}: ${(error as Error).message}`, { cause: error })
  }
  if (text === '') throw new WasmkubeError('local', `--token-file ${file} is empty`)
  return text
}
