// A token bucket: the rate limit of one direction of a session (rate-limit.ts). Plain functions
// on a plain object, the clock passed in, so the arithmetic is tested alone against a model
// (test/relay/token-bucket.test.ts) and the forwarder reads the clock once per turn.

export type Bucket = {
  /** Bytes per second refilled. */
  readonly rate: number
  /** The most the bucket holds: how far ahead of the rate a sender that paused may burst. */
  readonly burst: number
  /** Bytes that may go now; negative while a message larger than the burst is paid off. */
  tokens: number
  /** When `tokens` was last refilled, ms. */
  at: number
}

/** A full bucket: a session's first second may go at once. */
export function newBucket(rate: number, burst: number, now: number): Bucket {
  return { rate, burst, tokens: burst, at: now }
}

/** Add what the time since the last refill earned, up to the burst. */
function refill(bucket: Bucket, now: number): void {
  if (now <= bucket.at) return
  bucket.tokens = Math.min(bucket.burst, bucket.tokens + ((now - bucket.at) * bucket.rate) / 1000)
  bucket.at = now
}

/**
 * What a message of `size` bytes needs in the bucket before it may go. A message larger than
 * the burst could never find that many, so it goes once the bucket is full and leaves it in
 * debt: the long-run rate stays `rate` whatever the message sizes.
 */
function needed(bucket: Bucket, size: number): number {
  return size < bucket.burst ? size : bucket.burst
}

/** Take `size` bytes if the bucket, refilled first, has what the message needs; false when it must wait. */
export function take(bucket: Bucket, size: number, now: number): boolean {
  refill(bucket, now)
  if (bucket.tokens < needed(bucket, size)) return false
  bucket.tokens -= size
  return true
}

/** Whole ms, at least 1, until `take(size)` will succeed; as of the last refill. */
export function waitMs(bucket: Bucket, size: number): number {
  const short = needed(bucket, size) - bucket.tokens
  return short <= 0 ? 0 : Math.max(1, Math.ceil((short * 1000) / bucket.rate))
}
