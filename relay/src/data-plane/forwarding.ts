// The hot path. A message for an attached peer is either sent at once from the buffer uWS
// handed us, or copied into one arena shared by every connection and written, with the rest
// of its turn, in one corked write per peer; the arena is then reused, so forwarding small
// messages allocates no buffers of its own. Only messages for a peer that is away are copied
// into buffers of their own, since they outlive the turn (held.ts). What a message costs is in
// message-costs.ts, what the limits then close in backlog-limits.ts, the rate limit in
// rate-limit.ts.
import type { Peer, Session, Slot } from '../session/session.js'
import type { SessionTable } from '../session/table.js'
import type { SessionClose } from '../session/transitions.js'
import type { BacklogLimits } from './backlog-limits.js'
import { enforceLimits, observeBuffered, pinged, tooSlow } from './backlog-limits.js'
import { hold, keepQueued, takeHeld } from './held.js'
import { CLOSE_CODES } from './close-codes.js'
import { DIRECT_SEND_MIN_BYTES, QUEUED_MESSAGE_OVERHEAD } from './message-costs.js'
import { createRateLimit } from './rate-limit.js'
import { sent, sentMany } from './sent.js'

export type ForwardingOptions = Pick<BacklogLimits, 'maxBacklog' | 'maxTotalBacklog' | 'metrics'>

/** The arena starts at this size, grows when a turn needs more, and returns to it when a turn fits again. */
const ARENA_BYTES = 1024 * 1024

const SEND_DROPPED = 2

const BYTE_LIMIT: SessionClose = { reason: 'byte_limit', frame: CLOSE_CODES.byteLimit, remove: false }

export type Forwarder = ReturnType<typeof createForwarder>

/**
 * A plain Uint8Array over memory that is not zeroed first. Plain, not a Buffer: the hot path
 * takes a view of the arena per message, and a Buffer's subarray goes through its species
 * constructor, twice the cost of a Uint8Array's.
 */
function unfilledBytes(size: number): Uint8Array {
  return new Uint8Array(Buffer.allocUnsafeSlow(size).buffer, 0, size)
}

export function createForwarder(table: SessionTable, opts: ForwardingOptions) {
  const { metrics } = opts
  const backlog = table.backlog
  const limits: BacklogLimits = {
    table,
    backlog,
    metrics,
    maxBacklog: opts.maxBacklog,
    maxTotalBacklog: opts.maxTotalBacklog,
  }
  let arena = unfilledBytes(ARENA_BYTES)
  let arenaUsed = 0
  let flushScheduled = false
  const toFlush: Slot[] = []
  // The clock is read once per event-loop turn: every message of a turn arrived within
  // microseconds, and one syscall-free read per message still showed in profiles.
  let turnClock = 0
  const rate = createRateLimit(limits, sendQueued)

  /** A message from `from`'s peer, bound for the other slot. */
  function forward(from: Slot, message: ArrayBuffer, isBinary: boolean): void {
    const session = from.session
    const size = message.byteLength
    // byteBudget is Infinity for a session without a byte limit: one compare is what an
    // unlimited session pays for it.
    const total = session.bytesIn + size
    if (total > session.byteBudget) return overByteLimit(session)
    session.bytesIn = total
    const to = from.other
    // One compare is all an unlimited session pays for the rate limit.
    if (to.bucket !== null && !rate.admits(to, size, now())) {
      session.lastActivity = turnClock
      return rate.holdForRate(to, message, isBinary)
    }
    const peer = to.peer
    if (peer === null) {
      session.lastActivity = now()
      return hold(limits, to, message, isBinary)
    }
    if (size >= DIRECT_SEND_MIN_BYTES && to.queued.length === 0) {
      session.lastActivity = now()
      if (peer.send(message, isBinary, false) === SEND_DROPPED) return tooSlow(limits, to)
      sent(metrics, to, size)
      observeBuffered(limits, to)
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
    if (enforceLimits(limits, to)) return
    scheduleFlush(to)
  }

  /** What both peers sent before the message that passes the session's max_bytes reaches them first, then 4004. */
  function overByteLimit(session: Session): void {
    flushNow(session.initiator)
    flushNow(session.responder)
    table.close(session, BYTE_LIMIT)
  }

  /** A peer attached: hand it, in order, what was queued before it left and what was held while it was away. */
  function deliverHeld(slot: Slot): void {
    const peer = slot.peer
    if (peer === null || (slot.held.length === 0 && slot.queued.length === 0)) return
    if (slot.bucket !== null) return rate.attached(slot)
    const held = takeHeld(backlog, slot)
    let dropped = false
    peer.cork(() => {
      dropped = !sendQueued(slot)
      for (let i = 0; i < held.length && !dropped; i++) {
        const message = held[i]!
        if (peer.send(message.data, message.isBinary, false) === SEND_DROPPED) dropped = true
        else sent(metrics, slot, message.data.byteLength)
      }
    })
    if (dropped) return tooSlow(limits, slot)
    observeBuffered(limits, slot)
  }

  /** Send the slot's arena messages to its peer; false when uWS dropped one. Call inside cork. */
  function sendQueued(slot: Slot): boolean {
    const peer = slot.peer
    const queued = slot.queued
    if (peer === null || queued.length === 0) return true
    backlog.total -= slot.queuedBytes
    slot.queued = []
    slot.queuedBytes = 0
    // Counted once for the flush, not per message: at 16 B a message costs under a microsecond.
    let bytes = 0
    let i = 0
    for (; i < queued.length; i += 3) {
      const offset = queued[i]!
      const size = queued[i + 1]!
      if (peer.send(arena.subarray(offset, offset + size), queued[i + 2] === 1, false) === SEND_DROPPED) break
      bytes += size
    }
    sentMany(metrics, slot, i / 3, bytes)
    return i === queued.length
  }

  // One function corks every flush, its slot and result passed beside it: a closure per
  // flush and peer was two allocations per write, a share of the GC small messages cause.
  let corkSlot: Slot | null = null
  let corkOk = true
  function sendCorkSlot(): void {
    corkOk = sendQueued(corkSlot!)
  }

  /** sendQueued() inside the peer's cork. */
  function sendCorked(peer: Peer, slot: Slot): boolean {
    corkSlot = slot
    corkOk = true
    peer.cork(sendCorkSlot)
    corkSlot = null
    return corkOk
  }

  function now(): number {
    if (turnClock === 0) {
      turnClock = Date.now()
      endOfTurn()
    }
    return turnClock
  }

  function scheduleFlush(slot: Slot): void {
    if (slot.flushQueued) return
    slot.flushQueued = true
    // lastActivity has the turn's granularity: the first small message of a turn to a slot
    // stamps it, the rest of the turn's would write the same value again.
    slot.session.lastActivity = now()
    toFlush.push(slot)
    endOfTurn()
  }

  function endOfTurn(): void {
    if (flushScheduled) return
    flushScheduled = true
    setImmediate(flush)
  }

  /** End of the turn: one corked write per peer of what the turn queued for it, then the arena is free again. */
  function flush(): void {
    flushScheduled = false
    turnClock = 0
    for (let i = 0; i < toFlush.length; i++) {
      const slot = toFlush[i]!
      slot.flushQueued = false
      const peer = slot.peer
      if (slot.session.closed || slot.queued.length === 0) continue
      // The peer dropped since: its messages outlive the arena, so they become held copies.
      if (peer === null) {
        keepQueued(backlog, slot, arena)
        enforceLimits(limits, slot) // a held copy costs more than its place in the arena
        continue
      }
      if (!sendCorked(peer, slot)) tooSlow(limits, slot)
      else observeBuffered(limits, slot)
    }
    toFlush.length = 0
    // Give a grown arena back only after a turn that fit in the base size: shrinking after
    // every busy turn made the next one grow it again, copying as it went (15% of the relay's
    // profile at 1 KiB frames over 100 pairs).
    if (arena.length > ARENA_BYTES && arenaUsed <= ARENA_BYTES) arena = unfilledBytes(ARENA_BYTES)
    arenaUsed = 0
  }

  function growArena(needed: number): void {
    const bigger = unfilledBytes(Math.max(needed, arena.length * 2))
    bigger.set(arena.subarray(0, arenaUsed))
    arena = bigger
  }

  /**
   * Sends what this turn queued for the slot's peer at once: a close frame about to follow
   * must not overtake it (the end-of-turn flush skips a closed session).
   */
  function flushNow(slot: Slot): void {
    const peer = slot.peer
    if (peer === null || slot.queued.length === 0 || slot.session.closed) return
    if (!sendCorked(peer, slot)) tooSlow(limits, slot)
    else observeBuffered(limits, slot)
  }

  return {
    forward,
    deliverHeld,
    flushNow,
    /** The peer's socket wrote some of its backlog. */
    drained: (slot: Slot): void => observeBuffered(limits, slot),
    /** See backlog-limits.ts for why a ping counts. */
    pinged: (peer: Peer): void => pinged(limits, peer),
  }
}
