// The path (and query) of an invoke request, parsed once. It ends up behind a fixed prefix
// (the API server's `services/{app}/proxy`, or the Service's own URL), and a URL parser on
// the way resolves dot segments, reads `\` as `/` and, in the API server, decodes `%2F` into
// a separator: any of those in the caller's path would move the request out from under the
// prefix, to the rest of the Kubernetes API. So they are refused here, and what goes out is
// rebuilt from the checked segments, which the route check reads too.
import { InvalidInputError } from '@session-relay/common/errors'

/** A checked path: its segments in normal form (see normalSegment), and the query as given. */
export type InvokePath = { segments: string[]; query: string }

// RFC 3986 pchar without the percent-escape: accepted as they are in a query.
const PCHAR = /^[-A-Za-z0-9._~!$&'()*+,;=:@]$/
// What a path segment holds unescaped in normal form: the characters Go's net/url leaves
// as they are in a path. The API server's service proxy decodes the path and escapes it again
// that way, so a segment in this form reaches the function as the route check read it.
const PATH_AS_IS = /^[-A-Za-z0-9._~$&+,;=:@]$/
const HEX2 = /^[0-9A-Fa-f]{2}$/
// NUL, the other C0 controls and DEL end or split a request line somewhere along the way.
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL = /[\u0000-\u001f\u007f]/

export function parseInvokePath(raw: string): InvokePath {
  if (CONTROL.test(raw)) throw invalid('holds a control character or NUL')
  if (raw.includes('#')) throw invalid('holds a fragment ("#"), which no server receives')
  if (raw.includes('\\')) throw invalid('holds a backslash, which URL parsers read as "/"')
  if (!raw.startsWith('/')) throw invalid('must start with "/" (a path, not a URL)')
  const mark = raw.indexOf('?')
  const pathPart = mark === -1 ? raw : raw.slice(0, mark)
  const query = mark === -1 ? '' : normalQuery(raw.slice(mark + 1))
  const parts = pathPart.slice(1).split('/')
  const segments = parts.map((part, i) => {
    // Only the last segment may be empty: a trailing "/" is a path of its own, "//" is not.
    if (part === '' && i < parts.length - 1) throw invalid('holds an empty segment ("//")')
    return normalSegment(part, invalid)
  })
  return { segments, query }
}

/** The path and query to send: rebuilt from the checked parts, never the caller's text. */
export function invokeTarget(path: InvokePath): string {
  return '/' + path.segments.join('/') + (path.query === '' ? '' : '?' + path.query)
}

/**
 * True when the function's route takes this path, as Spin matches routes: `/...` every path,
 * `/api/...` `/api` and everything below it, any other route only itself. The route is read
 * in the same normal form; a stored route that has none (written before encoded dot segments
 * were refused) takes nothing.
 */
export function routeTakes(route: string, path: InvokePath): boolean {
  if (route === '/...') return true
  const wildcard = route.endsWith('/...')
  let routeSegments: string[]
  try {
    routeSegments = (wildcard ? route.slice(1, -4) : route.slice(1))
      .split('/')
      .map((part) => normalSegment(part, (reason) => new Error(reason)))
  } catch {
    return false
  }
  if (wildcard) return routeSegments.every((segment, i) => path.segments[i] === segment)
  return (
    routeSegments.length === path.segments.length && routeSegments.every((segment, i) => path.segments[i] === segment)
  )
}

/**
 * One segment in normal form: every escape decoded, then what PATH_AS_IS does not hold
 * escaped again, byte by byte of its UTF-8, in upper case; so `/a%3Ab` is `/a:b` and `/a!`
 * is `/a%21`, as the API server's proxy would forward them (RFC 3986 lets a server tell
 * `%3A` from `:`, but behind the proxy no function can). Refused: an escape of "/" or "\"
 * (a separator once decoded), "." and ".." however written, and a "%" that starts no escape.
 */
function normalSegment(part: string, refuse: (reason: string) => Error): string {
  const bytes: number[] = []
  const chars = [...part]
  for (let i = 0; i < chars.length; i++) {
    const char = chars[i] as string
    if (char === '%') {
      const hex = (chars[i + 1] ?? '') + (chars[i + 2] ?? '')
      if (!HEX2.test(hex)) throw refuse('holds a "%" that starts no percent-escape')
      const byte = parseInt(hex, 16)
      if (byte === 0x2f || byte === 0x5c) throw refuse(`holds an encoded separator ("%${hex}")`)
      bytes.push(byte)
      i += 2
    } else {
      // encodeURIComponent leaves ASCII it allows as it is and escapes the rest as UTF-8.
      const encoded = encode(char, refuse)
      if (encoded === char) bytes.push(char.charCodeAt(0))
      else for (const hex of encoded.slice(1).split('%')) bytes.push(parseInt(hex, 16))
    }
  }
  let out = ''
  for (const byte of bytes) {
    const char = String.fromCharCode(byte)
    out += byte < 0x80 && PATH_AS_IS.test(char) ? char : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`
  }
  if (out === '.' || out === '..') throw refuse('holds a "." or ".." segment (also when percent-encoded)')
  return out
}

/** The query as given, with characters outside RFC 3986's query set percent-encoded. */
function normalQuery(query: string): string {
  let out = ''
  const chars = [...query]
  for (let i = 0; i < chars.length; i++) {
    const char = chars[i] as string
    if (char === '%' && !HEX2.test((chars[i + 1] ?? '') + (chars[i + 2] ?? '')))
      throw invalid('holds a "%" that starts no percent-escape')
    out += char === '%' || char === '/' || char === '?' || PCHAR.test(char) ? char : encode(char, invalid)
  }
  return out
}

function encode(char: string, refuse: (reason: string) => Error): string {
  try {
    return encodeURIComponent(char)
  } catch {
    throw refuse('is not valid Unicode (a lone surrogate)')
  }
}

function invalid(reason: string): InvalidInputError {
  return new InvalidInputError(`path: ${reason}`)
}
