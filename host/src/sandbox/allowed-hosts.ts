// Spin's `allowed_outbound_hosts` (a component's lock metadata): each entry is
// `scheme://host[:port]`, where the scheme may be `*`, the host `*`, `*.example.com` (any name
// below it), a name, an IP address or a CIDR range, and the port `*`, a number or a range
// `a..b` (end excluded); without a port, the scheme's default port (a `*` scheme needs one).
// Followed: spinframework/spin crates/outbound-networking (the config's parser and `allows`).
// Templated entries (`{{ name }}`) and service chaining (`self`, `*.spin.internal`) are not
// supported here: a lock that names them does not start, rather than allowing less or more
// than it says.
import { BlockList, isIP } from 'node:net'
import { cidr } from './addresses.js'

export type OutboundTarget = { scheme: string; host: string; port: number }

type HostPattern = { kind: 'any' } | { kind: 'name'; name: string } | { kind: 'below'; suffix: string } | { kind: 'range'; list: BlockList }
type PortPattern = { kind: 'any' } | { kind: 'range'; from: number; to: number }
type AllowedHost = { scheme: string; host: HostPattern; port: PortPattern }

const DEFAULT_PORTS: Record<string, number> = { http: 80, https: 443, postgres: 5432, mysql: 3306, redis: 6379, mqtt: 1883 }

export class AllowedHostError extends Error {
  readonly code = 'ERR_ALLOWED_OUTBOUND_HOST'
}

function fail (entry: string, reason: string): never {
  throw new AllowedHostError(`allowed_outbound_hosts entry ${JSON.stringify(entry)}: ${reason}`)
}

function parsePort (entry: string, text: string | undefined, scheme: string): PortPattern {
  if (text === undefined) {
    const port = DEFAULT_PORTS[scheme]
    if (port === undefined) fail(entry, scheme === '*' ? 'a port is required when the scheme is *' : `no default port for ${scheme}: name one`)
    return { kind: 'range', from: port, to: port + 1 }
  }
  if (text === '*') return { kind: 'any' }
  const range = /^(\d{1,5})\.\.(\d{1,5})$/.exec(text)
  if (range !== null) {
    const from = Number(range[1])
    const to = Number(range[2])
    if (from > 65535 || to > 65536 || from >= to) fail(entry, `the port range ${text} is empty or out of bounds`)
    return { kind: 'range', from, to }
  }
  if (!/^\d{1,5}$/.test(text) || Number(text) > 65535) fail(entry, `the port ${JSON.stringify(text)} is not a number from 0 to 65535, a range a..b, or *`)
  return { kind: 'range', from: Number(text), to: Number(text) + 1 }
}

function parseHost (entry: string, text: string): HostPattern {
  if (text === '*') return { kind: 'any' }
  if (text === 'self' || text === 'spin.internal' || text.endsWith('.spin.internal')) fail(entry, 'service chaining is not supported by this runtime')
  if (text.includes('/')) {
    const range = cidr(text)
    if (range === null) fail(entry, `${text} is not a CIDR range`)
    const list = new BlockList()
    list.addSubnet(range.address, range.bits, range.type)
    return { kind: 'range', list }
  }
  const unbracketed = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text
  if (isIP(unbracketed) !== 0) return { kind: 'name', name: unbracketed.toLowerCase() }
  if (text.startsWith('*.')) {
    const suffix = text.slice(2).toLowerCase()
    if (!/^[a-z0-9-]+(\.[a-z0-9-]+)*$/.test(suffix)) fail(entry, `${text} is not a host pattern`)
    return { kind: 'below', suffix }
  }
  if (!/^[a-zA-Z0-9-]+(\.[a-zA-Z0-9-]+)*\.?$/.test(text)) fail(entry, `${JSON.stringify(text)} is not a host name, an address, a range, *, or *.name`)
  return { kind: 'name', name: text.toLowerCase().replace(/\.$/, '') }
}

export function parseAllowedHost (entry: string): AllowedHost {
  if (entry.includes('{{')) fail(entry, 'templated entries are not supported by this runtime')
  const match = /^([a-z][a-z0-9+.-]*|\*):\/\/(.+)$/i.exec(entry)
  if (match === null) fail(entry, 'expected scheme://host[:port], with no path')
  const scheme = (match[1] as string).toLowerCase()
  const authority = (match[2] as string).replace(/\/$/, '')
  // A range carries its one slash (10.0.0.0/8:443); any other slash starts a path.
  const range = /^([0-9a-f.:]+\/\d{1,3})(?::([^:]*))?$/i.exec(authority)
  if (range === null && authority.includes('/')) fail(entry, 'expected scheme://host[:port], with no path')
  // An IPv6 address is bracketed; anything else splits at its last colon.
  const portAt = range !== null ? -1 : authority.startsWith('[') ? authority.indexOf(']:') + 1 : authority.lastIndexOf(':')
  const hostText = range !== null ? range[1] as string : portAt > 0 ? authority.slice(0, portAt) : authority
  const portText = range !== null ? range[2] : portAt > 0 ? authority.slice(portAt + 1) : undefined
  return { scheme, host: parseHost(entry, hostText), port: parsePort(entry, portText, scheme) }
}

function hostMatches (pattern: HostPattern, host: string): boolean {
  switch (pattern.kind) {
    case 'any': return true
    case 'name': return pattern.name === host
    case 'below': return host.endsWith(`.${pattern.suffix}`)
    case 'range': {
      const family = isIP(host)
      return family !== 0 && pattern.list.check(host, family === 4 ? 'ipv4' : 'ipv6')
    }
  }
}

/** Whether a request may go to `target`; throws an AllowedHostError for an entry it cannot read. */
export function allowedHosts (entries: readonly string[]): (target: OutboundTarget) => boolean {
  const parsed = entries.map(parseAllowedHost)
  return (target) => {
    const host = target.host.toLowerCase().replace(/\.$/, '')
    return parsed.some((allowed) =>
      (allowed.scheme === '*' || allowed.scheme === target.scheme) &&
      (allowed.port.kind === 'any' || (target.port >= allowed.port.from && target.port < allowed.port.to)) &&
      hostMatches(allowed.host, host))
  }
}

export function defaultPort (scheme: string): number | undefined {
  return DEFAULT_PORTS[scheme]
}
