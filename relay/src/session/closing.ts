// Connections the relay has closed that still owe their peer bytes. uWS 20.30 keeps an ended
// socket's buffer for about 15 s and no longer reports it, so such a connection is ended only
// once it reads again (its close frame after the bytes), and what it owes counts against the
// total backlog until then. One that does not read within CLOSE_GRACE_MS is dropped without
// its close frame, and past the total backlog limit the largest goes first.
import type { TableContext } from './context.js'
import type { Closing, Peer } from './session.js'

/** How long a closed connection that still owes bytes may take to start reading them before it is dropped. */
export const CLOSE_GRACE_MS = 5_000

/** `peer` is closed but owes `owed` bytes: count them and wait for it to read. */
export function startClosing(
  ctx: TableContext,
  peer: Peer,
  code: number,
  message: string | Uint8Array,
  owed: number,
): void {
  ctx.backlog.total += owed
  peer.getUserData().closing = {
    code,
    message,
    bytes: owed,
    timer: setTimeout(() => drop(ctx, peer, 'did not read within the grace'), CLOSE_GRACE_MS),
  }
  ctx.closing.add(peer)
}

/** A closed connection that owed bytes is reading again: end it, its close frame after them. */
export function closingDrained(ctx: TableContext, peer: Peer): void {
  const pending = forgetClosing(ctx, peer)
  if (pending !== null) peer.end(pending.code, pending.message)
}

/**
 * A closed connection waiting to be ended wrote nothing but owes more (uWS answered its
 * ping): count what it owes now. Returns that; 0 when it is not waiting.
 */
export function closingGrew(ctx: TableContext, peer: Peer): number {
  const pending = peer.getUserData().closing ?? null
  if (pending === null) return 0
  const owed = peer.getBufferedAmount()
  ctx.backlog.total += owed - pending.bytes
  pending.bytes = owed
  return owed
}

/** uWS reports a connection gone: if it was one waiting to be ended, its bytes no longer count. */
export function closingGone(ctx: TableContext, peer: Peer): void {
  forgetClosing(ctx, peer)
}

/**
 * Drop, without its close frame, the closed connection that owes the most: what the total
 * backlog limit gives up first, since its session is already over. False when there is none.
 */
export function dropLargestClosing(ctx: TableContext): boolean {
  let largest: Peer | null = null
  for (const peer of ctx.closing) {
    if (largest === null || peer.getUserData().closing!.bytes > largest.getUserData().closing!.bytes) largest = peer
  }
  if (largest === null) return false
  drop(ctx, largest, 'total backlog')
  return true
}

/** End a closed connection without its close frame. The log says which peer, and why: it sees 1006, not its session's close code. */
export function drop(ctx: TableContext, peer: Peer, why: string): void {
  const { slot, closing } = peer.getUserData()
  ctx.logger.info(
    { session: slot.session.id, slot: slot.name, owed: closing?.bytes ?? 0, why },
    'closed connection dropped',
  )
  peer.close() // runs the close handler, which forgets it
}

function forgetClosing(ctx: TableContext, peer: Peer): Closing | null {
  const data = peer.getUserData()
  const pending = data.closing ?? null
  if (pending === null) return null
  data.closing = null
  ctx.closing.delete(peer)
  clearTimeout(pending.timer)
  ctx.backlog.total -= pending.bytes
  return pending
}
