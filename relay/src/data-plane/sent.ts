// What the relay counts for every message it hands a peer: the bytes out of its direction
// (the session's bytes_out is the two added up) and the process's forwarded counters.
import type { Metrics } from '../http/metrics.js'
import type { Slot } from '../session/session.js'

export function sent(metrics: Metrics, to: Slot, size: number): void {
  to.bytesOut += size
  metrics.messagesForwarded++
  metrics.bytesForwarded += size
}

/** The same for `count` messages of `bytes` in all, counted once for a whole flush. */
export function sentMany(metrics: Metrics, to: Slot, count: number, bytes: number): void {
  to.bytesOut += bytes
  metrics.messagesForwarded += count
  metrics.bytesForwarded += bytes
}
