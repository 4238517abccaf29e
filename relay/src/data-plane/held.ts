// Messages for a peer that is away: copied into buffers of their own, since they outlive the
// turn, held in order, and counted against the backlog limits until the peer attaches again
// (decisions.md, "Messages while the counterpart is absent").
import type { HeldMessage, Slot } from '../session/session.js'
import type { BacklogLimits } from './backlog-limits.js'
import { enforceLimits } from './backlog-limits.js'
import { HELD_MESSAGE_OVERHEAD, QUEUED_MESSAGE_OVERHEAD } from './message-costs.js'

/** Keep a copy of a message for `to`, whose peer is away. */
export function hold(limits: BacklogLimits, to: Slot, message: ArrayBuffer, isBinary: boolean): void {
  const cost = message.byteLength + HELD_MESSAGE_OVERHEAD
  to.held.push({ data: new Uint8Array(message).slice(), isBinary })
  to.heldBytes += cost
  limits.backlog.total += cost
  enforceLimits(limits, to)
}

/** Take the slot's held messages for delivery: from now on they are the socket's to count. */
export function takeHeld(backlog: { total: number }, slot: Slot): HeldMessage[] {
  const held = slot.held
  slot.held = []
  backlog.total -= slot.heldBytes
  slot.heldBytes = 0
  return held
}

/** The peer left before its turn's flush: move its arena messages in front of its held ones, as copies. */
export function keepQueued(backlog: { total: number }, slot: Slot, arena: Uint8Array): void {
  const copies: HeldMessage[] = []
  for (let i = 0; i < slot.queued.length; i += 3) {
    const offset = slot.queued[i]!
    copies.push({
      data: new Uint8Array(arena.subarray(offset, offset + slot.queued[i + 1]!)),
      isBinary: slot.queued[i + 2] === 1,
    })
  }
  slot.held = copies.concat(slot.held)
  const more = copies.length * (HELD_MESSAGE_OVERHEAD - QUEUED_MESSAGE_OVERHEAD)
  slot.heldBytes += slot.queuedBytes + more
  backlog.total += more
  slot.queued = []
  slot.queuedBytes = 0
}
