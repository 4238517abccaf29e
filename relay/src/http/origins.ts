import { isIPv6 } from 'node:net'

// Decides whether a browser page may open a WebSocket or make a CORS request.
// Arguments are the raw Origin and Host request headers.
export type OriginPolicy = (origin: string, host: string) => boolean

/** How the relay's own pages would be served: what a same-origin Origin must start with. */
export type OwnScheme = 'http' | 'https'

type Origin = { scheme: OwnScheme; host: string; port: number; defaultPort: number }
type Pattern = { host: string; subdomains: boolean; port: number | 'any' | 'default' }

const defaultPorts = new Map([
  ['http', 80],
  ['https', 443],
  ['ws', 80],
  ['wss', 443],
])
const webSchemes = new Map<string, OwnScheme>([
  ['http', 'http'],
  ['https', 'https'],
  ['ws', 'http'],
  ['wss', 'https'],
])

// ASCII only: browsers send internationalised names as punycode. Both
// expressions are fixed and linear, so hostile headers cannot cause ReDoS.
const hostName = /^[a-z0-9_-]+(?:\.[a-z0-9_-]+)*$/
const portNumber = /^(?:0|[1-9][0-9]{0,4})$/

// Patterns are host patterns without a scheme, compared case-insensitively:
//   example.com        that host on the scheme's default port (80 or 443)
//   example.com:8443   that host on that port
//   *.example.com      any subdomain at any depth, not example.com itself
//   example.com:*      any port; combinable: *.example.com:*
//   [::1]:*            IPv6 literals in brackets
// Same-origin requests (Origin scheme `ownScheme`, host and port equal to
// Host) always pass, so an empty list allows only same-origin. Throws on a
// malformed pattern so a typo fails at start instead of silently rejecting
// every browser.
export function compileOriginPolicy(patterns: string[], ownScheme: OwnScheme): OriginPolicy {
  const compiled = patterns.map(compilePattern)
  return (originHeader, hostHeader) => {
    const origin = parseOrigin(originHeader)
    if (origin === undefined) return false
    return isSameOrigin(origin, hostHeader, ownScheme) || compiled.some((pattern) => matches(pattern, origin))
  }
}

function compilePattern(text: string): Pattern {
  const invalid = (why: string): Error => new Error(`invalid origin pattern ${JSON.stringify(text)}: ${why}`)
  let rest = text.toLowerCase()
  if (rest.includes('://')) throw invalid('give the host without a scheme, e.g. example.com')
  const subdomains = rest.startsWith('*.')
  if (subdomains) rest = rest.slice(2)
  const parts = splitAuthority(rest)
  const host = parts && parseHost(parts.host)
  if (parts === undefined || host === undefined) throw invalid('expected host, host:port, *.host or host:*')
  // '*.0.0.1' would read as a wildcard over IP addresses, which is never meant.
  if (subdomains && (host.startsWith('[') || /^[0-9]+$/.test(host.slice(host.lastIndexOf('.') + 1)))) {
    throw invalid('a wildcard needs a domain name')
  }
  if (parts.port === undefined) return { host, subdomains, port: 'default' }
  if (parts.port === '*') return { host, subdomains, port: 'any' }
  const port = parsePort(parts.port)
  if (port === undefined) throw invalid('bad port')
  return { host, subdomains, port }
}

function matches(pattern: Pattern, origin: Origin): boolean {
  // The leading dot keeps '*.example.com' from matching 'evil-example.com'.
  const hostMatches = pattern.subdomains ? origin.host.endsWith(`.${pattern.host}`) : origin.host === pattern.host
  if (!hostMatches) return false
  if (pattern.port === 'any') return true
  if (pattern.port === 'default') return origin.port === origin.defaultPort
  return origin.port === pattern.port
}

// The Host header carries no scheme: the relay's own is the one it serves
// (or publishes, see server.ts), and a page on http://host is not the same
// origin as a relay on https://host, nor the other way round. A missing port
// in Host means that scheme's default.
function isSameOrigin(origin: Origin, hostHeader: string, ownScheme: OwnScheme): boolean {
  if (origin.scheme !== ownScheme) return false
  const host = parseAuthority(hostHeader.toLowerCase())
  return host !== undefined && host.host === origin.host && (host.port ?? origin.defaultPort) === origin.port
}

// Accepts only a serialised origin, scheme://host[:port]: anything a
// browser would not send (userinfo, path, query, 'null') never matches.
function parseOrigin(text: string): Origin | undefined {
  const lower = text.toLowerCase()
  const separator = lower.indexOf('://')
  if (separator === -1) return undefined
  const scheme = lower.slice(0, separator)
  const defaultPort = defaultPorts.get(scheme)
  if (defaultPort === undefined) return undefined
  const authority = parseAuthority(lower.slice(separator + 3))
  if (authority === undefined) return undefined
  return { scheme: webSchemes.get(scheme)!, host: authority.host, port: authority.port ?? defaultPort, defaultPort }
}

function parseAuthority(text: string): { host: string; port: number | undefined } | undefined {
  const parts = splitAuthority(text)
  if (parts === undefined) return undefined
  const host = parseHost(parts.host)
  if (host === undefined) return undefined
  if (parts.port === undefined) return { host, port: undefined }
  const port = parsePort(parts.port)
  return port === undefined ? undefined : { host, port }
}

// Splits 'host', 'host:port', '[v6]' or '[v6]:port' without validating.
function splitAuthority(text: string): { host: string; port: string | undefined } | undefined {
  let hostEnd = text.startsWith('[') ? text.indexOf(']') + 1 : text.indexOf(':')
  if (hostEnd === 0) return undefined
  if (hostEnd === -1) hostEnd = text.length
  const rest = text.slice(hostEnd)
  if (rest === '') return { host: text, port: undefined }
  if (!rest.startsWith(':')) return undefined
  return { host: text.slice(0, hostEnd), port: rest.slice(1) }
}

// Expects lower case. IPv6 literals are put in the URL standard's
// compressed form so '[0:0::1]' and '[::1]' compare equal.
function parseHost(text: string): string | undefined {
  if (text.startsWith('[') && text.endsWith(']')) {
    if (!isIPv6(text.slice(1, -1))) return undefined
    try {
      return new URL(`http://${text}`).hostname
    } catch {
      return undefined // zone ids pass isIPv6 but are not valid in a URL
    }
  }
  return hostName.test(text) ? text : undefined
}

function parsePort(text: string): number | undefined {
  if (!portNumber.test(text)) return undefined
  const port = Number(text)
  return port <= 65535 ? port : undefined
}
