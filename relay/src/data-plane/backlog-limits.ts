// The backlog limits: what each connection, and the whole process, may owe peers before the
// relay closes a session with 4003 (decisions.md, "Backpressure"). Called by the forwarder
// after every change to what a slot owes; the scan for the largest backlog runs only when the
// process-wide total overflows.
import type { Metrics } from '../http/metrics.js'
import type { Peer, Slot } from '../session/session.js'
import type { SessionTable } from '../session/table.js'
import type { SessionClose } from '../session/transitions.js'
import { CLOSE_CODES } from './close-codes.js'

export type BacklogLimits = {
  readonly table: SessionTable
  /** The table's running total, the same object. */
  readonly backlog: { total: number }
  readonly metrics: Metrics
  /** Per-connection limit on bytes waiting for a peer: its socket backlog plus what held and queued messages cost. */
  readonly maxBacklog: number
  /** The same across the whole process. */
  readonly maxTotalBacklog: number
}

const TOO_SLOW: SessionClose = { reason: 'too_slow', frame: CLOSE_CODES.tooSlow, remove: false }

/** Close what the backlog limits say must close; true when that includes `slot`'s session. */
export function enforceLimits(limits: BacklogLimits, slot: Slot): boolean {
  if (backlogOf(slot) > limits.maxBacklog) tooSlow(limits, slot)
  // Also after that close: the closed receiver's bytes, read afresh from uWS, stay counted
  // until it reads them, and may be more than the relay last saw.
  if (limits.backlog.total > limits.maxTotalBacklog) shedLargest(limits)
  return slot.session.closed
}

/** Read what the slot's socket still buffers, and check the limits against it. */
export function observeBuffered(limits: BacklogLimits, slot: Slot): void {
  const peer = slot.peer
  if (peer === null) return
  const buffered = peer.getBufferedAmount()
  limits.backlog.total += buffered - slot.buffered
  slot.buffered = buffered
  enforceLimits(limits, slot)
}

/**
 * The peer sent a ping, and uWS has already queued its pong: it answers every ping itself,
 * before this handler runs, with no option not to. A pong is bytes written to the peer like
 * any other, so it counts against the same limits: a peer that pings and never reads would
 * otherwise grow its buffer to uWS's maxBackpressure (the limit plus the largest message)
 * unseen by the limits, on every connection at once. So a live connection is closed with
 * 4003 once its pongs pass the limit, and a closed one still owed its close frame, which
 * pings instead of reading, is dropped once it owes more than a live one may. Pings are
 * rare in honest traffic, so one read of the buffered amount per ping costs nothing.
 */
export function pinged(limits: BacklogLimits, peer: Peer): void {
  const data = peer.getUserData()
  if (!data.ended) return observeBuffered(limits, data.slot)
  if (limits.table.closingGrew(peer) > limits.maxBacklog)
    limits.table.dropClosing(peer, 'its pongs passed the connection backlog limit')
  else if (limits.backlog.total > limits.maxTotalBacklog) shedLargest(limits)
}

// Past the process-wide limit, connections of sessions already closed that still owe bytes
// go first, then the live sessions furthest behind, whoever sent last: a receiver that keeps
// up is not closed for the ones that stopped reading. A scan of the table, but only when the
// total overflows, and each close frees the largest backlog left.
function shedLargest(limits: BacklogLimits): void {
  const { table, backlog } = limits
  while (backlog.total > limits.maxTotalBacklog) {
    if (table.dropLargestClosing()) continue
    let largest: Slot | null = null
    let largestBytes = 0
    for (const session of table.list()) {
      if (session.closed) continue
      for (const slot of [session.initiator, session.responder]) {
        const bytes = backlogOf(slot)
        if (bytes > largestBytes) {
          largest = slot
          largestBytes = bytes
        }
      }
    }
    if (largest === null) return
    tooSlow(limits, largest)
  }
}

function backlogOf(slot: Slot): number {
  return slot.buffered + slot.heldBytes + slot.queuedBytes
}

/** Close the slot's session with 4003: its receiver cannot keep up, or uWS dropped a send to it. */
export function tooSlow(limits: BacklogLimits, slot: Slot): void {
  limits.table.close(slot.session, TOO_SLOW)
}
