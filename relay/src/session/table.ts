import type { Logger } from '../logger.js'
import type { CloseReason, Metrics, SessionState } from '../http/metrics.js'
import { CLOSE_CODES } from '../data-plane/close-codes.js'
import type { CloseFrame } from '../data-plane/close-codes.js'
import { newCredentials, slotOfToken } from './tokens.js'
import type { WebSocket } from '../http/uws.js'

export type SlotName = 'initiator' | 'responder'

/** uWS per-connection user data. `ended` turns true once the relay or the peer closed it. */
export type PeerData = { slot: Slot; ended: boolean; closing?: Closing | null }

/** A connection the relay has closed but not yet ended: its close frame waits for it to read. */
type Closing = { code: number; message: string | Uint8Array; bytes: number; timer: NodeJS.Timeout }

/**
 * How long a closed connection that still owes bytes may take to start reading them before
 * it is dropped without its close frame. uWS 20.30 keeps an ended socket's buffer for about
 * 15 s and no longer reports it, so the relay ends such a connection only once it reads, and
 * counts what it owes against the total backlog until then.
 */
export const CLOSE_GRACE_MS = 5_000
export type Peer = WebSocket<PeerData>

/** A message kept for a slot whose peer is away. */
export type HeldMessage = { data: Uint8Array; isBinary: boolean }

export type Slot = {
  name: SlotName
  session: Session
  other: Slot
  peer: Peer | null
  /** Copies of messages that arrived while the peer was away, oldest first. Empty while it is attached. */
  held: HeldMessage[]
  /** What `held` costs: payload plus HELD_MESSAGE_OVERHEAD per message (see forwarding.ts). */
  heldBytes: number
  /** Messages waiting in the forwarder's arena for this turn's flush: flat (offset, length, isBinary) triples. */
  queued: number[]
  /** What `queued` costs: payload plus QUEUED_MESSAGE_OVERHEAD per message. */
  queuedBytes: number
  /** Last value of the peer's getBufferedAmount() the relay saw. */
  buffered: number
  /** Set while the flush of `queued` is scheduled. */
  flushQueued: boolean
  /** Runs while this slot is empty after the session has had a peer: peer-wait. */
  waitTimer: NodeJS.Timeout | null
}

export type Session = {
  id: string
  createdAt: number
  expiresAt: number
  lastActivity: number
  bytesIn: number
  bytesOut: number
  closed: boolean
  everAttached: boolean
  /** SHA-256 of the initiator's then the responder's token (see tokens.ts). */
  tokenDigests: Buffer
  initiator: Slot
  responder: Slot
}

export type SessionView = {
  id: string
  state: SessionState
  created_at: string
  expires_at: string
  last_activity: string
  bytes_in: number
  bytes_out: number
  initiator_connected: boolean
  responder_connected: boolean
}

/** How a session closes: the reason it is counted under, the frame its peers get, and whether it leaves the table at once. */
export type SessionClose = {
  reason: CloseReason
  /** A peer's own close frame is passed on as its bytes. */
  frame: { code: number; message: string | Uint8Array }
  /** Removed sessions answer 404 at once; the others stay visible as `closed` until the next sweep. */
  remove: boolean
}

export type CreatedSession = { session: Session; initiatorToken: string; responderToken: string }

export type SessionTableOptions = {
  ttlMs: number
  peerWaitMs: number
  reapIntervalMs: number
  logger: Logger
  metrics: Metrics
}

export type SessionTable = ReturnType<typeof createSessionTable>

// setTimeout fires at once for delays past 2^31-1 ms; longer waits are re-armed.
const MAX_TIMER_MS = 2 ** 31 - 1

export function createSessionTable (opts: SessionTableOptions) {
  const { logger, metrics } = opts
  // Every session gets the same TTL, so insertion order is expiry order: the head of the
  // map is always the next to expire and one timer serves the whole table.
  const sessions = new Map<string, Session>()
  const closedIds: string[] = []
  /** Bytes waiting to reach peers, across the process: socket backlogs plus what held and queued messages cost. */
  const backlog = { total: 0 }
  let connections = 0
  let shuttingDown = false
  const closing = new Set<Peer>()
  let expiryTimer: NodeJS.Timeout | null = null
  const reapTimer = setInterval(sweep, opts.reapIntervalMs)
  reapTimer.unref()

  function create (): CreatedSession {
    const now = Date.now()
    const { id, initiatorToken, responderToken, digests } = newCredentials()
    const session = {
      id,
      createdAt: now,
      expiresAt: now + opts.ttlMs,
      lastActivity: now,
      bytesIn: 0,
      bytesOut: 0,
      closed: false,
      everAttached: false,
      tokenDigests: digests,
    } as Session
    session.initiator = newSlot('initiator', session)
    session.responder = newSlot('responder', session)
    session.initiator.other = session.responder
    session.responder.other = session.initiator
    sessions.set(session.id, session)
    metrics.sessionsCreated++
    if (expiryTimer === null) armExpiry(session.expiresAt)
    logger.info({ session: session.id, expires_at: iso(session.expiresAt) }, 'session created')
    return { session, initiatorToken, responderToken }
  }

  /** A session that can still be read: not removed and not past its expiry. */
  function find (id: string): Session | undefined {
    const session = sessions.get(id)
    if (session === undefined || session.expiresAt <= Date.now()) return undefined
    return session
  }

  function list (): Session[] {
    const now = Date.now()
    const live: Session[] = []
    for (const session of sessions.values()) if (session.expiresAt > now) live.push(session)
    return live
  }

  /** Every entry, expired ones awaiting removal included, without copying the table: for a paged walk. */
  function entries (): IterableIterator<Session> {
    return sessions.values()
  }

  /** The slot a token opens, or null; see slotOfToken for why it takes constant time. */
  function slotForToken (session: Session, token: string): Slot | null {
    const slot = slotOfToken(session.tokenDigests, token)
    return slot === 0 ? session.initiator : slot === 1 ? session.responder : null
  }

  function attach (slot: Slot, peer: Peer): void {
    const session = slot.session
    slot.peer = peer
    connections++
    session.everAttached = true
    session.lastActivity = Date.now()
    stopWaiting(slot)
    if (slot.other.peer === null && slot.other.waitTimer === null) startWaiting(slot.other)
    logger.info({ session: session.id, slot: slot.name, state: stateOf(session) }, 'peer attached')
  }

  /** The peer's connection was lost without a close frame: the slot may be reattached within peer-wait. */
  function dropped (slot: Slot, why: string): void {
    const session = slot.session
    releasePeer(slot)
    session.lastActivity = Date.now()
    startWaiting(slot)
    logger.info({ session: session.id, slot: slot.name, state: stateOf(session), why }, 'peer dropped')
  }

  /** Forget the slot's connection, after uWS reported it closed or before the relay ends it. */
  function releasePeer (slot: Slot): void {
    if (slot.peer === null) return
    slot.peer = null
    connections--
    backlog.total -= slot.buffered
    slot.buffered = 0
  }

  /**
   * Close a session: end both peers with the frame, kill its tokens. Removed sessions answer 404
   * at once; the others stay visible as `closed` until the next sweep.
   */
  function close (session: Session, { reason, frame, remove }: SessionClose): void {
    const { code, message } = frame
    if (!session.closed) {
      session.closed = true
      for (const slot of [session.initiator, session.responder]) {
        stopWaiting(slot)
        backlog.total -= slot.heldBytes + slot.queuedBytes
        slot.held = []
        slot.heldBytes = 0
        slot.queued = []
        slot.queuedBytes = 0
        endPeer(slot, code, message)
      }
      metrics.sessionsClosed[reason]++
      logger.info({ session: session.id, reason, code }, 'session closed')
      if (!remove) closedIds.push(session.id)
    }
    if (remove && sessions.delete(session.id)) logger.info({ session: session.id }, 'session removed')
  }

  function endPeer (slot: Slot, code: number, message: string | Uint8Array): void {
    const peer = slot.peer
    if (peer === null) return
    // Mark first: end() runs the close handler synchronously, which must not treat this as a drop.
    const data = peer.getUserData()
    data.ended = true
    releasePeer(slot)
    const owed = peer.getBufferedAmount()
    if (owed === 0 || shuttingDown) {
      peer.end(code, message)
      return
    }
    backlog.total += owed
    data.closing = { code, message, bytes: owed, timer: setTimeout(() => peer.close(), CLOSE_GRACE_MS) }
    closing.add(peer)
  }

  /** A closed connection that owed bytes is reading again: end it, its close frame after them. */
  function closingDrained (peer: Peer): void {
    const pending = forgetClosing(peer)
    if (pending !== null) peer.end(pending.code, pending.message)
  }

  /**
   * A closed connection waiting to be ended wrote nothing but owes more (uWS answered its
   * ping): count what it owes now. Returns that; 0 when it is not waiting.
   */
  function closingGrew (peer: Peer): number {
    const pending = peer.getUserData().closing ?? null
    if (pending === null) return 0
    const owed = peer.getBufferedAmount()
    backlog.total += owed - pending.bytes
    pending.bytes = owed
    return owed
  }

  /** uWS reports a connection gone: if it was one waiting to be ended, its bytes no longer count. */
  function closingGone (peer: Peer): void {
    forgetClosing(peer)
  }

  /**
   * Drop, without its close frame, the closed connection that owes the most: what the total
   * backlog limit gives up first, since its session is already over. False when there is none.
   */
  function dropLargestClosing (): boolean {
    let largest: Peer | null = null
    for (const peer of closing) {
      if (largest === null || peer.getUserData().closing!.bytes > largest.getUserData().closing!.bytes) largest = peer
    }
    if (largest === null) return false
    largest.close() // runs the close handler, which forgets it
    return true
  }

  function forgetClosing (peer: Peer): Closing | null {
    const data = peer.getUserData()
    const pending = data.closing ?? null
    if (pending === null) return null
    data.closing = null
    closing.delete(peer)
    clearTimeout(pending.timer)
    backlog.total -= pending.bytes
    return pending
  }

  function startWaiting (slot: Slot): void {
    if (slot.waitTimer !== null || slot.session.closed) return
    slot.waitTimer = setTimeout(() => {
      slot.waitTimer = null
      close(slot.session, { reason: 'peer_wait', frame: CLOSE_CODES.peerWait, remove: false })
    }, opts.peerWaitMs)
  }

  function stopWaiting (slot: Slot): void {
    if (slot.waitTimer === null) return
    clearTimeout(slot.waitTimer)
    slot.waitTimer = null
  }

  function armExpiry (at: number): void {
    expiryTimer = setTimeout(expireDue, Math.min(Math.max(at - Date.now(), 0), MAX_TIMER_MS))
    expiryTimer.unref()
  }

  function expireDue (): void {
    expiryTimer = null
    const now = Date.now()
    for (const session of sessions.values()) {
      if (session.expiresAt > now) {
        armExpiry(session.expiresAt)
        return
      }
      close(session, { reason: 'expired', frame: CLOSE_CODES.expired, remove: true })
    }
  }

  /** The periodic reap: closed sessions leave the table (expired ones left it when they expired). */
  function sweep (): void {
    const ids = closedIds.splice(0)
    for (const id of ids) sessions.delete(id)
    if (ids.length > 0) logger.info({ removed: ids.length }, 'swept closed sessions')
    expireDue()
  }

  /** Close every session with `frame`, for shutdown, and stop the timers. */
  function closeAll (reason: CloseReason, frame: CloseFrame): void {
    shuttingDown = true
    for (const session of sessions.values()) close(session, { reason, frame, remove: true })
    for (const peer of [...closing]) closingDrained(peer)
    stop()
  }

  function stop (): void {
    clearInterval(reapTimer)
    if (expiryTimer !== null) clearTimeout(expiryTimer)
    expiryTimer = null
  }

  function countByState (): Record<SessionState, number> {
    const counts: Record<SessionState, number> = { pending: 0, half_open: 0, open: 0, closed: 0 }
    for (const session of list()) counts[stateOf(session)]++
    return counts
  }

  return {
    create,
    find,
    list,
    entries,
    slotForToken,
    attach,
    dropped,
    releasePeer,
    close,
    sweep,
    closeAll,
    closingDrained,
    closingGrew,
    closingGone,
    dropLargestClosing,
    stop,
    countByState,
    backlog,
    connections: () => connections,
    size: () => sessions.size,
  }
}

function newSlot (name: SlotName, session: Session): Slot {
  return {
    name,
    session,
    other: undefined as unknown as Slot, // linked right after both slots exist
    peer: null,
    held: [],
    heldBytes: 0,
    queued: [],
    queuedBytes: 0,
    buffered: 0,
    flushQueued: false,
    waitTimer: null,
  }
}

export function stateOf (session: Session): SessionState {
  if (session.closed) return 'closed'
  const connected = (session.initiator.peer === null ? 0 : 1) + (session.responder.peer === null ? 0 : 1)
  return connected === 0 ? 'pending' : connected === 1 ? 'half_open' : 'open'
}

export function viewOf (session: Session): SessionView {
  return {
    id: session.id,
    state: stateOf(session),
    created_at: iso(session.createdAt),
    expires_at: iso(session.expiresAt),
    last_activity: iso(session.lastActivity),
    bytes_in: session.bytesIn,
    bytes_out: session.bytesOut,
    initiator_connected: session.initiator.peer !== null,
    responder_connected: session.responder.peer !== null,
  }
}

export function iso (ms: number): string {
  return new Date(ms).toISOString()
}
