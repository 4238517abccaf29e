// The per-session rate limit, bytes per second per direction, as the relay's own flow control.
// uWebSockets.js cannot pause a WebSocket's reads (docs/relay.md, "Backpressure"), so a sender
// cannot be slowed at the TCP level. Instead a direction forwards what its token bucket
// admits; what arrives faster is held as for a peer that is away (held.ts), counted against
// the same backlog limits, and released as the bucket refills, by one timer per session. A
// sender that waits for its peer's acknowledgements (`relay attach`) is thereby slowed to the
// rate; one that does not fills what it may hold and is closed with 4003, as a slow receiver's
// sender is.
import type { Session, Slot } from '../session/session.js'
import type { BacklogLimits } from './backlog-limits.js'
import { observeBuffered, tooSlow } from './backlog-limits.js'
import { hold } from './held.js'
import { HELD_MESSAGE_OVERHEAD } from './message-costs.js'
import { sent } from './sent.js'
import { take, waitMs } from './token-bucket.js'

const SEND_DROPPED = 2

/** `sendQueued` sends what the forwarder's arena holds for a slot (call inside cork; false when uWS dropped one). */
export function createRateLimit(limits: BacklogLimits, sendQueued: (slot: Slot) => boolean) {
  const { metrics } = limits

  /** Whether a message for `to`, a rate-limited slot, may go now: nothing held before it, and the bucket has room. */
  function admits(to: Slot, size: number, now: number): boolean {
    return to.peer !== null && to.held.length === 0 && take(to.bucket!, size, now)
  }

  /** Hold a message the bucket did not admit, and make sure the session's timer will release it. */
  function holdForRate(to: Slot, message: ArrayBuffer, isBinary: boolean): void {
    // Only the first held message arms the timer: while any is held for an attached peer, the
    // timer runs for the oldest, and a flood must not re-arm it per message.
    const first = to.peer !== null && to.held.length === 0
    if (first) metrics.rateHeld[to.name]++
    hold(limits, to, message, isBinary)
    if (first && !to.session.closed) arm(to.session, waitMs(to.bucket!, message.byteLength))
  }

  /** Run the session's timer in `ms`, or sooner if it is already due sooner: the other direction may wait longer. */
  function arm(session: Session, ms: number): void {
    const due = Date.now() + ms
    if (session.rateTimer !== null) {
      if (session.rateDue <= due) return
      clearTimeout(session.rateTimer)
    }
    session.rateDue = due
    session.rateTimer = setTimeout(release, ms, session)
    session.rateTimer.unref()
  }

  /** The session's timer: each direction sends what its bucket now admits; the timer runs again while any is held. */
  function release(session: Session): void {
    session.rateTimer = null
    const now = Date.now()
    const next = Math.min(releaseSlot(session.initiator, now), releaseSlot(session.responder, now))
    if (next !== Infinity && !session.closed) arm(session, next)
  }

  /** Send what the bucket admits of the slot's held messages, oldest first; ms until the next may go (Infinity: none held). */
  function releaseSlot(slot: Slot, now: number): number {
    const peer = slot.peer
    if (peer === null || slot.session.closed || (slot.held.length === 0 && slot.queued.length === 0)) return Infinity
    const bucket = slot.bucket!
    const held = slot.held
    let dropped = false
    peer.cork(() => {
      dropped = !sendQueued(slot)
      while (!dropped && held.length > 0 && take(bucket, held[0]!.data.byteLength, now)) {
        const message = held.shift()!
        const size = message.data.byteLength
        slot.heldBytes -= size + HELD_MESSAGE_OVERHEAD
        limits.backlog.total -= size + HELD_MESSAGE_OVERHEAD
        if (peer.send(message.data, message.isBinary, false) === SEND_DROPPED) dropped = true
        else sent(metrics, slot, size)
      }
    })
    if (dropped) {
      tooSlow(limits, slot)
      return Infinity
    }
    observeBuffered(limits, slot)
    return held.length === 0 || slot.session.closed ? Infinity : waitMs(bucket, held[0]!.data.byteLength)
  }

  return {
    admits,
    holdForRate,
    /** The slot's peer attached: what was held for it goes at the rate, not at once. */
    attached: (slot: Slot): void => {
      const next = releaseSlot(slot, Date.now())
      if (next === Infinity) return
      metrics.rateHeld[slot.name]++
      arm(slot.session, next)
    },
  }
}
