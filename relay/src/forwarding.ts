import type { Metrics } from './metrics.js'
import type { SessionTable, Slot } from './sessions.js'

export type ForwardingOptions = {
  /** Per-connection limit on bytes waiting for a peer: its socket backlog plus held messages. */
  maxBacklog: number
  /** The same across the whole process. */
  maxTotalBacklog: number
  metrics: Metrics
}

/**
 * Messages at least this big go straight from the received buffer to the peer when nothing
 * is held for it; smaller ones are copied and written once per event-loop turn, because one
 * syscall per small message costs more than the copy (uWS 20.30 does not cork the other
 * socket from inside a message handler).
 */
export const DIRECT_SEND_MIN_BYTES = 4096

const SEND_DROPPED = 2

export type Forwarder = ReturnType<typeof createForwarder>

export function createForwarder (table: SessionTable, opts: ForwardingOptions) {
  const { metrics } = opts
  const backlog = table.backlog
  let flushScheduled = false
  const toFlush: Slot[] = []

  /** A message from `from`'s peer, bound for the other slot. */
  function forward (from: Slot, message: ArrayBuffer, isBinary: boolean): void {
    const session = from.session
    const size = message.byteLength
    session.bytesIn += size
    session.lastActivity = Date.now()
    const to = from.other
    const peer = to.peer
    if (peer !== null && to.held.length === 0 && size >= DIRECT_SEND_MIN_BYTES) {
      if (peer.send(message, isBinary, false) === SEND_DROPPED) return tooSlow(to)
      sent(to, size)
      observeBuffered(to)
      return
    }
    // The ArrayBuffer is detached when the handler returns: keep a copy.
    to.held.push({ data: new Uint8Array(message).slice(), isBinary })
    to.heldBytes += size
    backlog.total += size
    if (overLimit(to)) return tooSlow(to)
    if (peer !== null) scheduleFlush(to)
  }

  /** Hand everything held for the slot to its peer, in order, in one corked write. */
  function deliverHeld (slot: Slot): void {
    const peer = slot.peer
    if (peer === null || slot.held.length === 0) return
    const held = slot.held
    slot.held = []
    backlog.total -= slot.heldBytes
    slot.heldBytes = 0
    let dropped = false
    peer.cork(() => {
      for (const message of held) {
        if (peer.send(message.data, message.isBinary, false) === SEND_DROPPED) {
          dropped = true
          return
        }
        sent(slot, message.data.byteLength)
      }
    })
    if (dropped) return tooSlow(slot)
    observeBuffered(slot)
  }

  /** The peer's socket wrote some of its backlog. */
  function drained (slot: Slot): void {
    observeBuffered(slot)
  }

  function scheduleFlush (slot: Slot): void {
    if (slot.flushQueued) return
    slot.flushQueued = true
    toFlush.push(slot)
    if (!flushScheduled) {
      flushScheduled = true
      setImmediate(flush)
    }
  }

  function flush (): void {
    flushScheduled = false
    const slots = toFlush.splice(0)
    for (const slot of slots) {
      slot.flushQueued = false
      if (!slot.session.closed) deliverHeld(slot)
    }
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
    if (overLimit(slot)) tooSlow(slot)
  }

  function overLimit (slot: Slot): boolean {
    return slot.buffered + slot.heldBytes > opts.maxBacklog || backlog.total > opts.maxTotalBacklog
  }

  function tooSlow (slot: Slot): void {
    table.close(slot.session, 'too_slow', 4003, 'receiver too slow', false)
  }

  return { forward, deliverHeld, drained }
}
