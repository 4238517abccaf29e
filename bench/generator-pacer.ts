import type { Pair } from './generator-types.js'
import type { Samples } from './generator-samples.js'

/**
 * Send at a fixed total rate, each pair at its share, and take one-way latencies after a short
 * settle. `pump` runs on a 1 ms tick and writes what each pair owes in one batch, as a client
 * that buffers for a millisecond would; a read refills only a pair its window held back, so
 * the number of writes follows the tick, not the rate.
 *
 * A frame carries the time it was written, so its latency is the server's and the kernel's,
 * not the generator's timer: Node's 1 ms timer fires 1 to 4 ms late on two shared cores, and
 * stamping the time a frame was due charged that to every server alike. A frame that a full
 * window held back carries the time it was due instead: that wait is the server's doing and
 * counts (no coordinated omission). How late the pacer itself wrote is kept in `lateness`.
 */
export function createPacer(
  pairs: Pair[],
  rate: number,
  send: (pair: Pair, count: number, stamp: number, spacing: number) => void,
  lateness: Samples,
) {
  const origin = performance.now()
  const msPerMessage = (1000 * pairs.length) / rate
  // Spread the pairs' schedules over one message interval, so their frames do not all fall due at once.
  const offset = (pair: Pair): number => (pair.index / pairs.length) * msPerMessage
  const handed = new Array<number>(pairs.length).fill(0)
  const heldBack = new Array<boolean>(pairs.length).fill(false)
  // When the phase ended: frames due before it that a full window still holds back are sent
  // as reads make room, and counted, or a stall at the phase's end would vanish from the figures.
  let stoppedAt = Infinity
  function sendDue(pair: Pair, at: number): void {
    const now = Math.min(at, stoppedAt)
    const owed = Math.floor((now - origin - offset(pair)) / msPerMessage) + 1 - handed[pair.index]!
    const room = pair.window - (pair.sent - pair.received)
    const count = Math.min(room, owed)
    const wasHeldBack = heldBack[pair.index]!
    heldBack[pair.index] = owed > room
    if (count <= 0) return
    const firstDue = origin + offset(pair) + handed[pair.index]! * msPerMessage
    if (wasHeldBack) {
      send(pair, count, firstDue, msPerMessage)
    } else {
      for (let k = 0; k < count; k++) lateness.add(now - (firstDue + k * msPerMessage))
      send(pair, count, now, 0)
    }
    handed[pair.index] = handed[pair.index]! + count
  }
  return {
    pump(): void {
      if (stoppedAt !== Infinity) return
      const now = performance.now()
      for (const pair of pairs) sendDue(pair, now)
    },
    refill(pair: Pair): void {
      if (heldBack[pair.index]!) sendDue(pair, performance.now())
    },
    stop: () => {
      stoppedAt = performance.now()
    },
    elapsedMs: () => performance.now() - origin,
    lateness,
  }
}
