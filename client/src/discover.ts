// GET /.well-known/relay-config, cached for as long as its Cache-Control allows.
import { RelayError, httpError } from './errors.js'
import type { Discovery } from './types.js'

type Cached = { value: Discovery | null; until: number }
const cache = new Map<string, Cached>()

export type DiscoverOptions = {
  fetch?: typeof fetch
  /** The clock, for tests. */
  now?: () => number
}

/**
 * The relay's discovery document, or null when the relay runs with auth disabled (it answers
 * 404 then, and the admin API needs no token). Cached per relay for the answer's max-age;
 * no-store or no-cache is not cached.
 */
export async function discover(baseUrl: string, opts: DiscoverOptions = {}): Promise<Discovery | null> {
  const now = opts.now ?? Date.now
  const url = new URL('/.well-known/relay-config', httpBase(baseUrl)).href
  const hit = cache.get(url)
  if (hit !== undefined && hit.until > now()) return hit.value
  let response: Response
  try {
    response = await (opts.fetch ?? fetch)(url, { headers: { accept: 'application/json' } })
  } catch (cause) {
    throw new RelayError('network', `cannot reach ${url}`, { cause })
  }
  let value: Discovery | null
  if (response.status === 404) {
    await response.body?.cancel()
    value = null
  } else if (response.ok) {
    value = (await response.json()) as Discovery
  } else {
    throw httpError('discovery', response.status, await response.text())
  }
  const maxAge = maxAgeOf(response.headers.get('cache-control'))
  if (maxAge > 0) cache.set(url, { value, until: now() + maxAge * 1000 })
  else cache.delete(url)
  return value
}

function maxAgeOf(header: string | null): number {
  if (header === null) return 0
  const directives = header
    .toLowerCase()
    .split(',')
    .map((d) => d.trim())
  if (directives.includes('no-store') || directives.includes('no-cache')) return 0
  const maxAge = directives.find((d) => d.startsWith('max-age='))
  const seconds = Number(maxAge?.slice('max-age='.length))
  return Number.isFinite(seconds) && seconds > 0 ? seconds : 0
}

/** http(s) base for a relay given as http(s):// or ws(s)://. */
export function httpBase(baseUrl: string): string {
  const url = new URL(baseUrl)
  if (url.protocol === 'ws:') url.protocol = 'http:'
  if (url.protocol === 'wss:') url.protocol = 'https:'
  return url.href
}
