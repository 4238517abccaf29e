// What the pieces of the session table share: the table itself and its running totals. One
// plain object handed to module-level functions, so each piece reads on its own.
import type { Logger } from '../logger.js'
import type { Metrics } from '../http/metrics.js'
import type { SessionTracing } from '../tracing/hooks.js'
import type { Peer, Session } from './session.js'

export type TableContext = {
  /**
   * Every session by id. Every session gets the same TTL, so insertion order is expiry order:
   * the head of the map is always the next to expire and one timer serves the whole table.
   */
  readonly sessions: Map<string, Session>
  /** Closed sessions that stay visible as `closed` until the next sweep removes them. */
  readonly closedIds: string[]
  /** Bytes waiting to reach peers, across the process: socket backlogs plus what held and queued messages cost. */
  readonly backlog: { total: number }
  /** Closed connections that still owe bytes, waiting to be ended (closing.ts). */
  readonly closing: Set<Peer>
  /** Attached peers. */
  connections: number
  /** Sessions not yet closed: what a drain waits for. */
  live: number
  /** Sessions not yet closed, by caller (Session.caller); a caller with none has no entry. */
  readonly heldBy: Map<string, number>
  /** Set once shutdown has begun: connections are ended at once, whatever they owe. */
  shuttingDown: boolean
  readonly ttlMs: number
  readonly peerWaitMs: number
  readonly logger: Logger
  readonly metrics: Metrics
  /** A session's spans (tracing/hooks.ts), told of its creation, attaches, drops and close; null: tracing off. */
  readonly tracing: SessionTracing | null
}
