// Which addresses a function's outgoing requests may reach once a name is resolved: none of
// loopback, private, link-local, shared (CGNAT), documentation, multicast or reserved ranges,
// in IPv4 or IPv6 (IPv4-mapped and NAT64 forms included), unless the operator allows a range
// (`--allow-private-outbound`). This is what keeps a function that may call `api.example.com`
// from reaching the control plane, another application's port or a cloud metadata service by
// a name that resolves to one of them.
import { BlockList, isIP } from 'node:net'

const REFUSED_V4: Array<[string, number]> = [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.88.99.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15],
  ['198.51.100.0', 24], ['203.0.113.0', 24], ['224.0.0.0', 4], ['240.0.0.0', 4],
]
const REFUSED_V6: Array<[string, number]> = [
  ['::', 96], ['::1', 128], ['64:ff9b::', 96], ['64:ff9b:1::', 48], ['100::', 64], ['2001::', 23], ['2001:db8::', 32],
  ['2002::', 16], ['fc00::', 7], ['fe80::', 10], ['fec0::', 10], ['ff00::', 8],
]

export type AddressPolicy = { refused: (address: string) => boolean }

export type Cidr = { address: string; bits: number; type: 'ipv4' | 'ipv6' }

/** `a.b.c.d/n` or `v6::/n` read, or null when `text` is not one (the allow-list reads its ranges here too). */
export function cidr (text: string): Cidr | null {
  const match = /^([^/]+)\/(\d{1,3})$/.exec(text)
  if (match === null) return null
  const address = match[1] as string
  const bits = Number(match[2])
  const family = isIP(address)
  if (family === 0 || bits > (family === 4 ? 32 : 128)) return null
  return { address, bits, type: family === 4 ? 'ipv4' : 'ipv6' }
}

/** `a.b.c.d/n` or `v6::/n`, comma-separated; throws naming the first that is not one. */
export function parseRanges (text: string): string[] {
  const ranges = text.split(',').map((part) => part.trim()).filter((part) => part !== '')
  for (const range of ranges) {
    if (cidr(range) === null) throw new Error(`${JSON.stringify(range)} is not a CIDR range (a.b.c.d/n or an IPv6 address/n)`)
  }
  return ranges
}

// The eight 16-bit groups of an IPv6 address (an embedded dotted quad becomes two of them).
function groups (address: string): number[] {
  let text = address.toLowerCase()
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text)
  if (dotted !== null) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number]
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`
  }
  const [head = '', tail] = text.split('::')
  const left = head === '' ? [] : head.split(':')
  const right = tail === undefined || tail === '' ? [] : tail.split(':')
  const middle = tail === undefined ? [] : new Array<string>(8 - left.length - right.length).fill('0')
  return [...left, ...middle, ...right].map((group) => parseInt(group, 16))
}

// ::ffff:a.b.c.d (in any spelling) is an IPv4 address in IPv6 clothing: judged as IPv4.
function unmapped (address: string): string {
  if (isIP(address) !== 6) return address
  const parts = groups(address)
  if (parts.slice(0, 5).every((group) => group === 0) && parts[5] === 0xffff) {
    const [high = 0, low = 0] = parts.slice(6)
    return `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`
  }
  return address
}

export function addressPolicy (allowedRanges: readonly string[]): AddressPolicy {
  const refused = new BlockList()
  for (const [address, bits] of REFUSED_V4) refused.addSubnet(address, bits, 'ipv4')
  for (const [address, bits] of REFUSED_V6) refused.addSubnet(address, bits, 'ipv6')
  const allowed = new BlockList()
  for (const range of allowedRanges) {
    const parsed = cidr(range)
    if (parsed === null) throw new Error(`${JSON.stringify(range)} is not a CIDR range (a.b.c.d/n or an IPv6 address/n)`)
    allowed.addSubnet(parsed.address, parsed.bits, parsed.type)
  }
  return {
    refused (raw) {
      const address = unmapped(raw)
      const family = isIP(address)
      // Not an address at all: nothing to connect to, so nothing is allowed.
      if (family === 0) return true
      const type = family === 4 ? 'ipv4' : 'ipv6'
      return refused.check(address, type) && !allowed.check(address, type)
    },
  }
}

/** The operator's allowed ranges, as the host's setting put them in its environment. */
export const ALLOWED_RANGES_ENV = 'SPIN_HOST_ALLOW_PRIVATE_OUTBOUND'
