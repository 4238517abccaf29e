// Admission limits: how many failed attaches, failed admin authentications and session
// creations one client address may cause, and how many sessions the process holds at once.
// They run on upgrades and admin requests only, never per message.
import { isIPv6 } from 'node:net'
import type { HttpResponse } from './uws.js'

/** `count` events per `windowMs`, in bursts of up to `count`. */
export type RateLimit = { count: number; windowMs: number }

export type AddressLimiter = {
  /** Whole seconds until `address` may go ahead again; 0 when it may now. */
  retryAfter(address: string): number
  /** Count one event against `address`. */
  hit(address: string): void
  /** Go ahead and count it, or the seconds to wait; for events that are limited themselves, not their failures. */
  take(address: string): number
  /** Addresses tracked now (bounded by `maxAddresses`). */
  size(): number
}

/** Tokens left and when they were counted: a token bucket per address. */
type Bucket = { tokens: number; at: number }

/**
 * A token bucket per address, refilled at `count` per window. The table is bounded: it keeps
 * the addresses seen most recently, drops buckets that have refilled (they are the same as no
 * bucket), and past `maxAddresses` forgets the least recently seen. A flood of distinct
 * addresses therefore costs at most `maxAddresses` entries; the price is that an address
 * forgotten early starts again with a full bucket, which fails open, never locks anyone out.
 */
export function createAddressLimiter(
  limit: RateLimit,
  maxAddresses: number,
  clock: () => number = Date.now,
): AddressLimiter {
  const buckets = new Map<string, Bucket>()
  const perMs = limit.count / limit.windowMs

  function tokensOf(bucket: Bucket | undefined, now: number): number {
    if (bucket === undefined) return limit.count
    return Math.min(limit.count, bucket.tokens + (now - bucket.at) * perMs)
  }

  function retryAfter(address: string): number {
    const tokens = tokensOf(buckets.get(address), clock())
    if (tokens >= 1) return 0
    return Math.max(1, Math.ceil((1 - tokens) / perMs / 1000))
  }

  function hit(address: string): void {
    const now = clock()
    const tokens = tokensOf(buckets.get(address), now) - 1
    // Delete first so the entry moves to the end: the map stays in order of last use.
    buckets.delete(address)
    buckets.set(address, { tokens, at: now })
    forgetStale(now)
  }

  function take(address: string): number {
    const wait = retryAfter(address)
    if (wait === 0) hit(address)
    return wait
  }

  function forgetStale(now: number): void {
    // Two at a time keeps each call O(1) and still outpaces one insertion per call.
    for (let i = 0; i < 2; i++) {
      const first = buckets.entries().next()
      if (first.done === true || tokensOf(first.value[1], now) < limit.count) break
      buckets.delete(first.value[0])
    }
    while (buckets.size > maxAddresses) buckets.delete(buckets.keys().next().value as string)
  }

  return { retryAfter, hit, take, size: () => buckets.size }
}

/** A limiter that never limits: the setting is `off`. */
export const unlimited: AddressLimiter = { retryAfter: () => 0, hit: () => {}, take: () => 0, size: () => 0 }

/**
 * The address limits are kept for: the TCP peer's address, an IPv4-mapped IPv6 address as
 * IPv4, and an IPv6 address as its /64, since one host usually holds a whole /64.
 */
export function clientAddress(res: HttpResponse): string {
  return addressKey(Buffer.from(res.getRemoteAddressAsText()).toString())
}

export function addressKey(text: string): string {
  if (!isIPv6(text)) return text
  // uWS writes every address in full IPv6 form; an IPv4 client of a dual-stack listener is
  // 0000:0000:0000:0000:0000:ffff:7f00:0001.
  const groups = expandIPv6(text)
  if (groups.slice(0, 5).every((group) => group === 0) && groups[5] === 0xffff) {
    return [groups[6]! >> 8, groups[6]! & 255, groups[7]! >> 8, groups[7]! & 255].join('.')
  }
  return `${groups
    .slice(0, 4)
    .map((group) => group.toString(16))
    .join(':')}::/64`
}

/** The eight 16-bit groups of a valid IPv6 address, a dotted IPv4 tail included. */
function expandIPv6(text: string): number[] {
  let address = text.toLowerCase()
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(address)
  if (dotted !== null) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number]
    address = `${address.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`
  }
  const [head, tail] = address.split('::') as [string, string | undefined]
  const left = head === '' ? [] : head.split(':')
  const right = tail === undefined || tail === '' ? [] : tail.split(':')
  const zeros = Array<string>(8 - left.length - right.length).fill('0')
  return [...left, ...(tail === undefined ? [] : zeros), ...right].map((group) => parseInt(group, 16))
}
