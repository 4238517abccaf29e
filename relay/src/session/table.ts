// The session table: every session by id, and the one API the admin routes, the data plane
// and the forwarder use on it. The pieces are in their own files: the session data
// (session.ts), its state transitions (transitions.ts), closed connections still owed bytes
// (closing.ts), expiry and the sweep (expiry.ts), slot tokens (tokens.ts).
import type { CloseFrame } from '../data-plane/close-codes.js'
import { CLOSE_CODES } from '../data-plane/close-codes.js'
import type { CloseReason, Metrics } from '../http/metrics.js'
import type { Logger } from '../logger.js'
import type { RequestTrace, SessionTracing } from '../tracing/hooks.js'
import { closingDrained, closingGone, closingGrew, drop, dropLargestClosing } from './closing.js'
import type { TableContext } from './context.js'
import { startExpiry } from './expiry.js'
import type { Peer, Session, SessionLimits, SessionState, Slot } from './session.js'
import { iso, newSession, stateOf } from './session.js'
import { newCredentials, slotOfToken } from './tokens.js'
import type { SessionClose } from './transitions.js'
import { attach, closeSession, dropped, releasePeer } from './transitions.js'

export type CreatedSession = { session: Session; initiatorToken: string; responderToken: string }

export type SessionTableOptions = {
  ttlMs: number
  peerWaitMs: number
  reapIntervalMs: number
  logger: Logger
  metrics: Metrics
  /** null or absent: tracing off. */
  tracing?: SessionTracing | null
}

export type SessionTable = ReturnType<typeof createSessionTable>

export function createSessionTable(opts: SessionTableOptions) {
  const ctx: TableContext = {
    sessions: new Map(),
    closedIds: [],
    backlog: { total: 0 },
    closing: new Set(),
    connections: 0,
    live: 0,
    heldBy: new Map(),
    shuttingDown: false,
    ttlMs: opts.ttlMs,
    peerWaitMs: opts.peerWaitMs,
    logger: opts.logger,
    metrics: opts.metrics,
    tracing: opts.tracing ?? null,
  }
  const { sessions } = ctx
  const expiry = startExpiry(ctx, opts.reapIntervalMs)

  /**
   * A new session for `caller` (see Session.caller); without limits, the node's TTL and no
   * others. `request`: the span of the request that asked for it, when tracing is on.
   */
  function create(
    caller: string,
    limits: SessionLimits = { maxBytes: null, bytesPerSecond: null, ttlMs: ctx.ttlMs },
    request: RequestTrace | null = null,
  ): CreatedSession {
    const now = Date.now()
    const { initiatorToken, responderToken, ...credentials } = newCredentials()
    const session = newSession(credentials, now, limits, caller)
    sessions.set(session.id, session)
    ctx.live++
    ctx.heldBy.set(caller, (ctx.heldBy.get(caller) ?? 0) + 1)
    ctx.metrics.sessionsCreated++
    // The table's one expiry timer relies on insertion order being expiry order: a session
    // that ends sooner than the node's TTL gets a timer of its own.
    if (limits.ttlMs < ctx.ttlMs) {
      session.ttlTimer = setTimeout(
        () => closeSession(ctx, session, { reason: 'expired', frame: CLOSE_CODES.expired, remove: true }),
        limits.ttlMs,
      )
      session.ttlTimer.unref()
    } else {
      expiry.created(session.expiresAt)
    }
    ctx.logger.info({ session: session.id, expires_at: iso(session.expiresAt) }, 'session created')
    ctx.tracing?.created(session, request)
    return { session, initiatorToken, responderToken }
  }

  /** A session that can still be read: not removed and not past its expiry. */
  function find(id: string): Session | undefined {
    const session = sessions.get(id)
    if (session === undefined || session.expiresAt <= Date.now()) return undefined
    return session
  }

  function list(): Session[] {
    const now = Date.now()
    const live: Session[] = []
    for (const session of sessions.values()) if (session.expiresAt > now) live.push(session)
    return live
  }

  /** The slot a token opens, or null; see slotOfToken for why it takes constant time. */
  function slotForToken(session: Session, token: string): Slot | null {
    const slot = slotOfToken(session.tokenDigests, token)
    return slot === 0 ? session.initiator : slot === 1 ? session.responder : null
  }

  /** Close every session with `frame`, for shutdown, and stop the timers. */
  function closeAll(reason: CloseReason, frame: CloseFrame): void {
    ctx.shuttingDown = true
    for (const session of sessions.values()) closeSession(ctx, session, { reason, frame, remove: true })
    for (const peer of [...ctx.closing]) closingDrained(ctx, peer)
    expiry.stop()
  }

  function countByState(): Record<SessionState, number> {
    const counts: Record<SessionState, number> = { pending: 0, half_open: 0, open: 0, closed: 0 }
    for (const session of list()) counts[stateOf(session)]++
    return counts
  }

  /** Sessions that hold messages for their rate limit right now, by the slot those are bound for. */
  function countRateHeld(): { initiator: number; responder: number } {
    const counts = { initiator: 0, responder: 0 }
    for (const session of sessions.values()) {
      if (session.closed || session.limits.bytesPerSecond === null) continue
      for (const slot of [session.initiator, session.responder])
        if (slot.peer !== null && slot.held.length > 0) counts[slot.name]++
    }
    return counts
  }

  return {
    create,
    find,
    list,
    /** Every entry, expired ones awaiting removal included, without copying the table: for a paged walk. */
    entries: (): IterableIterator<Session> => sessions.values(),
    slotForToken,
    attach: (slot: Slot, peer: Peer): void => attach(ctx, slot, peer),
    dropped: (slot: Slot, why: string): void => dropped(ctx, slot, why),
    releasePeer: (slot: Slot): void => releasePeer(ctx, slot),
    close: (session: Session, how: SessionClose): void => closeSession(ctx, session, how),
    sweep: () => expiry.sweep(),
    closeAll,
    closingDrained: (peer: Peer): void => closingDrained(ctx, peer),
    closingGrew: (peer: Peer): number => closingGrew(ctx, peer),
    closingGone: (peer: Peer): void => closingGone(ctx, peer),
    dropLargestClosing: (): boolean => dropLargestClosing(ctx),
    /** End a closed connection still owed bytes without its close frame, saying why. */
    dropClosing: (peer: Peer, why: string): void => drop(ctx, peer, why),
    stop: () => expiry.stop(),
    countByState,
    countRateHeld,
    backlog: ctx.backlog,
    connections: () => ctx.connections,
    /** Sessions not closed yet, and closed connections still owed bytes: a drain ends when both are 0. */
    unfinished: (): number => ctx.live + ctx.closing.size,
    /** Sessions `caller` holds that are not closed yet. */
    heldBy: (caller: string): number => ctx.heldBy.get(caller) ?? 0,
    size: () => sessions.size,
  }
}
