import { CLOSE_CODES } from './close-codes.js'
import type { Metrics } from '../http/metrics.js'
import type { HeldMessage, Peer, Slot } from '../session/session.js'
import type { SessionTable } from '../session/table.js'

export type ForwardingOptions = {
  /** Per-connection limit on bytes waiting for a peer: its socket backlog plus what held and queued messages cost. */
  maxBacklog: number
  /** The same across the whole process. */
  maxTotalBacklog: number
  metrics: Metrics
}

/**
 * Messages at least this big go straight from the received buffer to the peer when nothing
 * is queued for it. Smaller ones are copied and written once per event-loop turn, because
 * one syscall per small message costs more than the copy (uWS 20.30 does not cork the other
 * socket from inside a message handler).
 */
export const DIRECT_SEND_MIN_BYTES = 4096

/**
 * What a held message costs beyond its payload, in bytes of RSS: its record, the Uint8Array and
 * ArrayBuffer of its copy, and its place in the slot's array. Measured on Node 20.20 (a million
 * messages held as hold() holds them, after GC): 284 B for an empty message, 300-310 B up to 64
 * bytes (copies V8 keeps on its heap), 445-456 B from 65 bytes on (a backing store of their own).
 * One figure, the largest: it is a memory bound, and a figure per size would tie it to V8's
 * thresholds. Counted by payload alone, 3 million empty messages took 750 MiB unseen.
 */
export const HELD_MESSAGE_OVERHEAD = 460

/**
 * The same for a message in the arena, whose payload the arena holds: its (offset, length,
 * isBinary) triple, 25-31 B measured the same way.
 */
export const QUEUED_MESSAGE_OVERHEAD = 32

/** The arena starts at this size, grows when a turn needs more, and returns to it when a turn fits again. */
const ARENA_BYTES = 1024 * 1024

const SEND_DROPPED = 2

export type Forwarder = ReturnType<typeof createForwarder>

/**
 * A plain Uint8Array over memory that is not zeroed first. Plain, not a Buffer: the hot path
 * takes a view of the arena per message, and a Buffer's subarray goes through its species
 * constructor, twice the cost of a Uint8Array's.
 */
function unfilledBytes (size: number): Uint8Array {
  return new Uint8Array(Buffer.allocUnsafeSlow(size).buffer, 0, size)
}

/**
 * The hot path. A message for an attached peer is either sent at once from the buffer uWS
 * handed us, or copied into one arena shared by every connection and written, with the rest
 * of its turn, in one corked write per peer; the arena is then reused, so forwarding small
 * messages allocates no buffers of its own. Only messages for a peer that is away are copied
 * into buffers of their own, since they outlive the turn.
 */
export function createForwarder (table: SessionTable, opts: ForwardingOptions) {
  const { metrics } = opts
  const backlog = table.backlog
  let arena = unfilledBytes(ARENA_BYTES)
  let arenaUsed = 0
  let flushScheduled = false
  const toFlush: Slot[] = []
  // The clock is read once per event-loop turn: every message of a turn arrived within
  // microseconds, and one syscall-free read per message still showed in profiles.
  let turnClock = 0

  /** A message from `from`'s peer, bound for the other slot. */
  function forward (from: Slot, message: ArrayBuffer, isBinary: boolean): void {
    const session = from.session
    const size = message.byteLength
    session.bytesIn += size
    session.lastActivity = now()
    const to = from.other
    const peer = to.peer
    if (peer === null) return hold(to, message, isBinary)
    if (to.queued.length === 0 && size >= DIRECT_SEND_MIN_BYTES) {
      if (peer.send(message, isBinary, false) === SEND_DROPPED) return tooSlow(to)
      sent(to, size)
      observeBuffered(to)
      return
    }
    // The ArrayBuffer is detached when the handler returns: copy it into the arena.
    if (arenaUsed + size > arena.length) growArena(arenaUsed + size)
    arena.set(new Uint8Array(message), arenaUsed)
    to.queued.push(arenaUsed, size, isBinary ? 1 : 0)
    arenaUsed += size
    const cost = size + QUEUED_MESSAGE_OVERHEAD
    to.queuedBytes += cost
    backlog.total += cost
    if (enforceLimits(to)) return
    scheduleFlush(to)
  }

  function hold (to: Slot, message: ArrayBuffer, isBinary: boolean): void {
    const cost = message.byteLength + HELD_MESSAGE_OVERHEAD
    to.held.push({ data: new Uint8Array(message).slice(), isBinary })
    to.heldBytes += cost
    backlog.total += cost
    enforceLimits(to)
  }

  /** A peer attached: hand it, in order, what was queued before it left and what was held while it was away. */
  function deliverHeld (slot: Slot): void {
    const peer = slot.peer
    if (peer === null || (slot.held.length === 0 && slot.queued.length === 0)) return
    const held = slot.held
    slot.held = []
    backlog.total -= slot.heldBytes
    slot.heldBytes = 0
    let dropped = false
    peer.cork(() => {
      dropped = !sendQueued(slot)
      for (let i = 0; i < held.length && !dropped; i++) {
        const message = held[i]!
        if (peer.send(message.data, message.isBinary, false) === SEND_DROPPED) dropped = true
        else sent(slot, message.data.byteLength)
      }
    })
    if (dropped) return tooSlow(slot)
    observeBuffered(slot)
  }

  /** Send the slot's arena messages to its peer; false when uWS dropped one. Call inside cork. */
  function sendQueued (slot: Slot): boolean {
    const peer = slot.peer
    const queued = slot.queued
    if (peer === null || queued.length === 0) return true
    backlog.total -= slot.queuedBytes
    slot.queued = []
    slot.queuedBytes = 0
    for (let i = 0; i < queued.length; i += 3) {
      const offset = queued[i]!
      const size = queued[i + 1]!
      if (peer.send(arena.subarray(offset, offset + size), queued[i + 2] === 1, false) === SEND_DROPPED) return false
      sent(slot, size)
    }
    return true
  }

  /** The peer's socket wrote some of its backlog. */
  function drained (slot: Slot): void {
    observeBuffered(slot)
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
  function pinged (peer: Peer): void {
    const data = peer.getUserData()
    if (!data.ended) return observeBuffered(data.slot)
    if (table.closingGrew(peer) > opts.maxBacklog) peer.close() // its close handler forgets it
    else if (backlog.total > opts.maxTotalBacklog) shedLargest()
  }

  function now (): number {
    if (turnClock === 0) {
      turnClock = Date.now()
      endOfTurn()
    }
    return turnClock
  }

  function scheduleFlush (slot: Slot): void {
    if (slot.flushQueued) return
    slot.flushQueued = true
    toFlush.push(slot)
    endOfTurn()
  }

  function endOfTurn (): void {
    if (flushScheduled) return
    flushScheduled = true
    setImmediate(flush)
  }

  function flush (): void {
    flushScheduled = false
    turnClock = 0
    for (let i = 0; i < toFlush.length; i++) {
      const slot = toFlush[i]!
      slot.flushQueued = false
      const peer = slot.peer
      if (slot.session.closed || slot.queued.length === 0) continue
      // The peer dropped since: its messages outlive the arena, so they become held copies.
      if (peer === null) {
        keepQueued(slot)
        enforceLimits(slot) // a held copy costs more than its place in the arena
        continue
      }
      let ok = true
      peer.cork(() => { ok = sendQueued(slot) })
      if (!ok) tooSlow(slot)
      else observeBuffered(slot)
    }
    toFlush.length = 0
    // Give a grown arena back only after a turn that fit in the base size: shrinking after
    // every busy turn made the next one grow it again, copying as it went (15% of the relay's
    // profile at 1 KiB frames over 100 pairs).
    if (arena.length > ARENA_BYTES && arenaUsed <= ARENA_BYTES) arena = unfilledBytes(ARENA_BYTES)
    arenaUsed = 0
  }

  /** Move a slot's arena messages in front of its held ones, as copies. */
  function keepQueued (slot: Slot): void {
    const copies: HeldMessage[] = []
    for (let i = 0; i < slot.queued.length; i += 3) {
      const offset = slot.queued[i]!
      copies.push({ data: new Uint8Array(arena.subarray(offset, offset + slot.queued[i + 1]!)), isBinary: slot.queued[i + 2] === 1 })
    }
    slot.held = copies.concat(slot.held)
    const more = copies.length * (HELD_MESSAGE_OVERHEAD - QUEUED_MESSAGE_OVERHEAD)
    slot.heldBytes += slot.queuedBytes + more
    backlog.total += more
    slot.queued = []
    slot.queuedBytes = 0
  }

  function growArena (needed: number): void {
    const bigger = unfilledBytes(Math.max(needed, arena.length * 2))
    bigger.set(arena.subarray(0, arenaUsed))
    arena = bigger
  }

  function sent (to: Slot, size: number): void {
    to.session.bytesOut += size
    metrics.messagesForwarded++
    metrics.bytesForwarded += size
  }

  function observeBuffered (slot: Slot): void {
    const peer = slot.peer
    if (peer === null) return
    const buffered = peer.getBufferedAmount()
    backlog.total += buffered - slot.buffered
    slot.buffered = buffered
    enforceLimits(slot)
  }

  /** Close what the backlog limits say must close; true when that includes `slot`'s session. */
  function enforceLimits (slot: Slot): boolean {
    if (backlogOf(slot) > opts.maxBacklog) tooSlow(slot)
    // Also after that close: the closed receiver's bytes, read afresh from uWS, stay counted
    // until it reads them, and may be more than the relay last saw.
    if (backlog.total > opts.maxTotalBacklog) shedLargest()
    return slot.session.closed
  }

  // Past the process-wide limit, connections of sessions already closed that still owe bytes
  // go first, then the live sessions furthest behind, whoever sent last: a receiver that keeps
  // up is not closed for the ones that stopped reading. A scan of the table, but only when the
  // total overflows, and each close frees the largest backlog left.
  function shedLargest (): void {
    while (backlog.total > opts.maxTotalBacklog) {
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
      tooSlow(largest)
    }
  }

  function backlogOf (slot: Slot): number {
    return slot.buffered + slot.heldBytes + slot.queuedBytes
  }

  function tooSlow (slot: Slot): void {
    table.close(slot.session, { reason: 'too_slow', frame: CLOSE_CODES.tooSlow, remove: false })
  }

  return { forward, deliverHeld, drained, pinged }
}
