// Registry credentials from a Docker `config.json` (the file `docker login` writes and a
// `kubernetes.io/dockerconfigjson` Secret holds) and the answers to a registry's challenge:
// Basic with those credentials, or Bearer with a token fetched from the challenge's realm.
// Nothing here logs; errors never carry a credential or a token.
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'

export type Credentials = { username: string; password: string }

type AuthEntry = { auth?: unknown; username?: unknown; password?: unknown }

// A config.json is small; anything bigger is not one.
const MAX_CONFIG_BYTES = 1024 * 1024

/** The credentials `config.json` in `dir` holds for `registry`, or null (no file, no entry). */
export async function dockerCredentials(dir: string, registry: string): Promise<Credentials | null> {
  let text: string
  try {
    const bytes = await readFile(join(dir, 'config.json'))
    if (bytes.length > MAX_CONFIG_BYTES)
      throw new Error(`${join(dir, 'config.json')} is larger than ${MAX_CONFIG_BYTES} bytes`)
    text = bytes.toString('utf8')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null
    throw error
  }
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    throw new Error(`${join(dir, 'config.json')} is not JSON`)
  }
  return credentialsFor(parsed, registry)
}

/** The entry of `auths` for `registry`, matched with or without a scheme and trailing path. */
export function credentialsFor(config: unknown, registry: string): Credentials | null {
  const auths = (config as { auths?: unknown } | null)?.auths
  if (typeof auths !== 'object' || auths === null) return null
  for (const [key, value] of Object.entries(auths as Record<string, unknown>)) {
    const host = key.replace(/^[a-z]+:\/\//, '').replace(/\/.*$/, '')
    if (host !== registry) continue
    const entry = value as AuthEntry
    if (typeof entry.username === 'string' && typeof entry.password === 'string')
      return { username: entry.username, password: entry.password }
    if (typeof entry.auth === 'string') {
      const decoded = Buffer.from(entry.auth, 'base64').toString('utf8')
      const colon = decoded.indexOf(':')
      if (colon === -1) throw new Error(`config.json: the auth entry for ${registry} is not base64 of user:password`)
      return { username: decoded.slice(0, colon), password: decoded.slice(colon + 1) }
    }
  }
  return null
}

export type Challenge = { scheme: string; params: Record<string, string> }

/** Parse `WWW-Authenticate: Bearer realm="...",service="...",scope="..."` (one challenge). */
export function parseChallenge(header: string): Challenge | null {
  const match = /^\s*([A-Za-z]+)\s*(.*)$/s.exec(header)
  if (match === null) return null
  const params: Record<string, string> = {}
  const pair = /([A-Za-z_]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^,\s]*))\s*,?\s*/gy
  const rest = match[2] as string
  pair.lastIndex = 0
  while (pair.lastIndex < rest.length) {
    const found = pair.exec(rest)
    if (found === null) break
    params[(found[1] as string).toLowerCase()] =
      found[2] !== undefined ? found[2].replace(/\\(.)/g, '$1') : (found[3] as string)
  }
  return { scheme: (match[1] as string).toLowerCase(), params }
}

export function basicHeader(credentials: Credentials): string {
  return `Basic ${Buffer.from(`${credentials.username}:${credentials.password}`).toString('base64')}`
}

const MAX_TOKEN_RESPONSE_BYTES = 64 * 1024

/** A Bearer token from the challenge's realm, asked with the credentials when there are some. */
export async function fetchToken(
  challenge: Challenge,
  credentials: Credentials | null,
  fallbackScope: string,
  options: { allowHttp: boolean; signal: AbortSignal },
): Promise<string> {
  const realm = challenge.params.realm
  if (realm === undefined) throw new Error('the registry asked for a Bearer token without naming a realm')
  const url = new URL(realm)
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && options.allowHttp)) {
    // Not url.origin: for a scheme URL does not know (ftp:, file:) that is the string "null".
    throw new Error(`the token realm ${url.protocol}//${url.host} is not https`)
  }
  if (challenge.params.service !== undefined) url.searchParams.set('service', challenge.params.service)
  url.searchParams.set('scope', challenge.params.scope ?? fallbackScope)
  const headers: Record<string, string> = {}
  if (credentials !== null) headers.authorization = basicHeader(credentials)
  const response = await fetch(url, { headers, signal: options.signal })
  const text = await readText(response, MAX_TOKEN_RESPONSE_BYTES)
  if (!response.ok) throw new Error(`the token service at ${url.origin} answered ${response.status}`)
  let body: { token?: unknown; access_token?: unknown }
  try {
    body = JSON.parse(text) as typeof body
  } catch {
    throw new Error(`the token service at ${url.origin} answered something that is not JSON`)
  }
  const token = typeof body.token === 'string' ? body.token : body.access_token
  if (typeof token !== 'string' || token === '') throw new Error(`the token service at ${url.origin} gave no token`)
  return token
}

/** The body as text, refusing more than `max` bytes. */
export async function readText(response: Response, max: number): Promise<string> {
  return Buffer.from(await readBounded(response, max)).toString('utf8')
}

/** The body's bytes, reading no more than `max` + one chunk before refusing. */
export async function readBounded(response: Response, max: number): Promise<Buffer> {
  const declared = Number(response.headers.get('content-length') ?? NaN)
  if (declared > max) {
    await response.body?.cancel()
    throw new Error(`response of ${declared} bytes is larger than the ${max} allowed`)
  }
  const chunks: Buffer[] = []
  let total = 0
  if (response.body === null) return Buffer.alloc(0)
  for await (const chunk of response.body) {
    const bytes = chunk as Uint8Array
    total += bytes.length
    if (total > max) {
      await response.body.cancel().catch(() => {})
      throw new Error(`response larger than the ${max} bytes allowed`)
    }
    chunks.push(Buffer.from(bytes))
  }
  return Buffer.concat(chunks)
}
