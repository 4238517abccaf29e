// The rate limit's token bucket (relay/src/data-plane/token-bucket.ts) on an injected clock,
// against a model: a FIFO of messages released as the forwarder's timer releases them, over
// any rate, burst and message sizes.
import fc from 'fast-check'
import t from 'tap'
import type { Bucket } from '@session-relay/relay/data-plane/token-bucket'
import { newBucket, take, waitMs } from '@session-relay/relay/data-plane/token-bucket'

type Release = { at: number; size: number }

/**
 * What the relay does with one direction: a message that arrives goes at once if nothing waits
 * before it and the bucket admits it, else it waits; the timer runs waitMs() later and releases
 * what the bucket then admits, oldest first. Arrivals are [ms after the previous, size].
 */
function simulate(rate: number, burst: number, arrivals: Array<[number, number]>): Release[] {
  const bucket = newBucket(rate, burst, 0)
  const waiting: number[] = []
  const released: Release[] = []
  let now = 0
  let timerAt = Infinity
  const release = (at: number): void => {
    while (waiting.length > 0 && take(bucket, waiting[0]!, at)) released.push({ at, size: waiting.shift()! })
    timerAt = waiting.length > 0 ? at + waitMs(bucket, waiting[0]!) : Infinity
  }
  for (const [gap, size] of arrivals) {
    const arrival = now + gap
    while (timerAt <= arrival) release(timerAt)
    now = arrival
    if (waiting.length === 0 && take(bucket, size, now)) released.push({ at: now, size })
    else {
      waiting.push(size)
      if (timerAt === Infinity) timerAt = now + waitMs(bucket, size)
    }
  }
  while (timerAt !== Infinity) release(timerAt)
  return released
}

const rates = fc.integer({ min: 1, max: 10_000_000 })
const sizes = fc.integer({ min: 0, max: 200_000 })

t.test(
  'every message goes, in order, and no window carries more than burst + rate x time (plus one message past the burst)',
  async (t) => {
    fc.assert(
      fc.property(
        rates,
        fc.integer({ min: 1, max: 10_000_000 }),
        fc.array(fc.tuple(fc.integer({ min: 0, max: 2000 }), sizes), { minLength: 1, maxLength: 60 }),
        (rate, burst, arrivals) => {
          const released = simulate(rate, burst, arrivals)
          if (released.length !== arrivals.length) return false
          if (released.some((r, i) => r.size !== arrivals[i]![1])) return false
          const slack = Math.max(0, Math.max(...arrivals.map(([, size]) => size)) - burst)
          for (let i = 0; i < released.length; i++) {
            let bytes = 0
            for (let j = i; j < released.length; j++) {
              bytes += released[j]!.size
              // A float's rounding is the only tolerance.
              if (bytes > burst + (rate * (released[j]!.at - released[i]!.at)) / 1000 + slack + 1e-6 * bytes + 1)
                return false
            }
          }
          return true
        },
      ),
      { numRuns: 500 },
    )
    t.pass('500 schedules')
  },
)

t.test(
  'a sender that keeps the direction busy gets exactly the rate: each message goes when the model says',
  async (t) => {
    // Everything arrives at 0 with a full bucket: message k may go once burst + rate x t covers
    // what went before it plus what it needs (itself, or the burst when it is larger).
    fc.assert(
      fc.property(
        rates,
        fc.integer({ min: 1, max: 10_000_000 }),
        fc.array(sizes, { minLength: 1, maxLength: 60 }),
        (rate, burst, messages) => {
          const released = simulate(
            rate,
            burst,
            messages.map((size) => [0, size]),
          )
          let before = 0
          for (let k = 0; k < messages.length; k++) {
            const need = Math.min(messages[k]!, burst)
            const model = Math.max(0, Math.ceil(((before + need - burst) * 1000) / rate))
            // The simulated clock moves in whole ms from where the last timer ran: at most 1 ms late per message.
            if (released[k]!.at < model - 1 || released[k]!.at > model + k + 1) return false
            before += messages[k]!
          }
          return true
        },
      ),
      { numRuns: 500 },
    )
    t.pass('500 transfers')
  },
)

t.test('waitMs is the wait: a ms sooner the bucket still refuses, then it admits', async (t) => {
  fc.assert(
    fc.property(
      rates,
      fc.integer({ min: 1, max: 10_000_000 }),
      fc.array(sizes, { minLength: 1, maxLength: 20 }),
      sizes,
      (rate, burst, spent, size) => {
        const bucket = newBucket(rate, burst, 0)
        for (const bytes of spent) take(bucket, bytes, 0)
        const wait = waitMs(bucket, size)
        const copy = (): Bucket => ({ ...bucket })
        if (wait === 0) return take(copy(), size, 0)
        return !take(copy(), size, wait - 1) && take(copy(), size, wait)
      },
    ),
    { numRuns: 2000 },
  )
  t.pass('2000 buckets')
})

t.test('a paused sender bursts at most a second (the burst), then the rate', async (t) => {
  const bucket = newBucket(1000, 1000, 0)
  t.ok(take(bucket, 1000, 10_000), 'after ten idle seconds: one burst')
  t.notOk(take(bucket, 1, 10_000), 'not two')
  t.ok(take(bucket, 500, 10_500), 'half a second later: half the rate')
  t.ok(take(bucket, 5000, 11_500), 'a message past the burst goes once the bucket is full...')
  t.notOk(take(bucket, 1, 15_499), '...and leaves it in debt until its bytes are paid')
  t.ok(take(bucket, 1, 15_501))
})
