// The session state machine (decisions.md, "Session states"): pending -> half_open -> open as
// peers attach, back as they drop, and closed for good on delete, expiry, a peer's close
// frame, peer-wait or a receiver too slow. Every change of a slot's peer or of `closed` is here.
import type { CloseReason } from '../http/metrics.js'
import { CLOSE_CODES } from '../data-plane/close-codes.js'
import { startClosing } from './closing.js'
import type { TableContext } from './context.js'
import type { Peer, Session, Slot } from './session.js'
import { stateOf } from './session.js'

/** How a session closes: the reason it is counted under, the frame its peers get, and whether it leaves the table at once. */
export type SessionClose = {
  reason: CloseReason
  /** A peer's own close frame is passed on as its bytes. */
  frame: { code: number; message: string | Uint8Array }
  /** Removed sessions answer 404 at once; the others stay visible as `closed` until the next sweep. */
  remove: boolean
}

/** A peer attached to its slot: the session may now be half open or open. */
export function attach(ctx: TableContext, slot: Slot, peer: Peer): void {
  const session = slot.session
  slot.peer = peer
  ctx.connections++
  session.everAttached = true
  session.lastActivity = Date.now()
  stopWaiting(slot)
  if (slot.other.peer === null && slot.other.waitTimer === null) startWaiting(ctx, slot.other)
  ctx.logger.info({ session: session.id, slot: slot.name, state: stateOf(session) }, 'peer attached')
  ctx.tracing?.attached(slot)
}

/** The peer's connection was lost without a close frame: the slot may be reattached within peer-wait. */
export function dropped(ctx: TableContext, slot: Slot, why: string): void {
  const session = slot.session
  releasePeer(ctx, slot)
  session.lastActivity = Date.now()
  startWaiting(ctx, slot)
  ctx.logger.info({ session: session.id, slot: slot.name, state: stateOf(session), why }, 'peer dropped')
  ctx.tracing?.dropped(slot)
}

/** Forget the slot's connection, after uWS reported it closed or before the relay ends it. */
export function releasePeer(ctx: TableContext, slot: Slot): void {
  if (slot.peer === null) return
  slot.peer = null
  ctx.connections--
  ctx.backlog.total -= slot.buffered
  slot.buffered = 0
}

/** Close a session: end both peers with the frame, drop what they were owed, kill its tokens. */
export function closeSession(ctx: TableContext, session: Session, { reason, frame, remove }: SessionClose): void {
  if (!session.closed) {
    session.closed = true
    ctx.live--
    const held = (ctx.heldBy.get(session.caller) ?? 1) - 1
    if (held === 0) ctx.heldBy.delete(session.caller)
    else ctx.heldBy.set(session.caller, held)
    if (session.ttlTimer !== null) clearTimeout(session.ttlTimer)
    if (session.rateTimer !== null) clearTimeout(session.rateTimer)
    session.rateTimer = null
    for (const slot of [session.initiator, session.responder]) {
      stopWaiting(slot)
      ctx.backlog.total -= slot.heldBytes + slot.queuedBytes
      slot.held = []
      slot.heldBytes = 0
      slot.queued = []
      slot.queuedBytes = 0
      endPeer(ctx, slot, frame.code, frame.message)
    }
    ctx.metrics.sessionsClosed[reason]++
    ctx.logger.info({ session: session.id, reason, code: frame.code }, 'session closed')
    ctx.tracing?.closed(session, reason, frame.code)
    if (!remove) ctx.closedIds.push(session.id)
  }
  if (remove && ctx.sessions.delete(session.id)) ctx.logger.info({ session: session.id }, 'session removed')
}

/** End the slot's connection with a close frame, at once unless it still owes bytes (closing.ts). */
function endPeer(ctx: TableContext, slot: Slot, code: number, message: string | Uint8Array): void {
  const peer = slot.peer
  if (peer === null) return
  // Mark first: end() runs the close handler synchronously, which must not treat this as a drop.
  const data = peer.getUserData()
  data.ended = true
  releasePeer(ctx, slot)
  const owed = peer.getBufferedAmount()
  if (owed === 0 || ctx.shuttingDown) {
    peer.end(code, message)
    return
  }
  startClosing(ctx, peer, code, message, owed)
}

function startWaiting(ctx: TableContext, slot: Slot): void {
  if (slot.waitTimer !== null || slot.session.closed) return
  slot.waitTimer = setTimeout(() => {
    slot.waitTimer = null
    closeSession(ctx, slot.session, { reason: 'peer_wait', frame: CLOSE_CODES.peerWait, remove: false })
  }, ctx.peerWaitMs)
}

function stopWaiting(slot: Slot): void {
  if (slot.waitTimer === null) return
  clearTimeout(slot.waitTimer)
  slot.waitTimer = null
}
