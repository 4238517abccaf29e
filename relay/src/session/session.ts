// A session and its two slots: the data the table, the state transitions and the forwarder
// share, and the state and admin view derived from it.
import type { Bucket } from '../data-plane/token-bucket.js'
import { newBucket } from '../data-plane/token-bucket.js'
import type { WebSocket } from '../http/uws.js'
import type { Credentials } from './tokens.js'

export type SessionState = 'pending' | 'half_open' | 'open' | 'closed'

type SlotName = 'initiator' | 'responder'

/** uWS per-connection user data. `ended` turns true once the relay or the peer closed it. */
export type PeerData = { slot: Slot; ended: boolean; closing?: Closing | null }

/** A connection the relay has closed but not yet ended: its close frame waits for it to read (closing.ts). */
export type Closing = { code: number; message: string | Uint8Array; bytes: number; timer: NodeJS.Timeout }

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
  /** What `held` costs: payload plus HELD_MESSAGE_OVERHEAD per message (data-plane/message-costs.ts). */
  heldBytes: number
  /** Messages waiting in the forwarder's arena for this turn's flush: flat (offset, length, isBinary) triples. */
  queued: number[]
  /** What `queued` costs: payload plus QUEUED_MESSAGE_OVERHEAD per message. */
  queuedBytes: number
  /** Last value of the peer's getBufferedAmount() the relay saw. */
  buffered: number
  /** Payload bytes handed to this slot's peer: the direction towards it (the session's bytes_out is both). */
  bytesOut: number
  /** Set while the flush of `queued` is scheduled. */
  flushQueued: boolean
  /** Runs while this slot is empty after the session has had a peer: peer-wait. */
  waitTimer: NodeJS.Timeout | null
  /** The rate limit of messages bound for this slot (data-plane/rate-limit.ts); null: none. */
  bucket: Bucket | null
}

/** What the admin caller set at creation, within the node's maxima; null: none. */
export type SessionLimits = {
  /** Payload bytes both peers may send in total; the message past it closes the session. */
  maxBytes: number | null
  /** Bytes per second each direction may carry, a second's worth at once; faster is held. */
  bytesPerSecond: number | null
  ttlMs: number
}

export type Session = {
  id: string
  createdAt: number
  expiresAt: number
  lastActivity: number
  bytesIn: number
  closed: boolean
  everAttached: boolean
  /** Who created it, for the per-caller cap: `claim:<value>` or `address:<client address>`. */
  caller: string
  limits: SessionLimits
  /** maxBytes, or Infinity: the hot path compares without a null check. */
  byteBudget: number
  /** Its own expiry timer, for a TTL shorter than the node's (the table's one timer serves the rest). */
  ttlTimer: NodeJS.Timeout | null
  /** Releases messages held for the rate limit, in both directions: one timer per limited session. */
  rateTimer: NodeJS.Timeout | null
  /** When rateTimer runs, ms. */
  rateDue: number
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
  limits: { max_bytes: number | null; bytes_per_second: number | null; ttl_seconds: number }
}

/** A new session, both slots empty and linked to each other. */
export function newSession(
  { id, digests }: Pick<Credentials, 'id' | 'digests'>,
  now: number,
  limits: SessionLimits,
  caller: string,
): Session {
  const session = {
    id,
    createdAt: now,
    expiresAt: now + limits.ttlMs,
    lastActivity: now,
    bytesIn: 0,
    closed: false,
    everAttached: false,
    caller,
    limits,
    byteBudget: limits.maxBytes ?? Infinity,
    ttlTimer: null,
    rateTimer: null,
    rateDue: 0,
    tokenDigests: digests,
  } as Session
  session.initiator = newSlot('initiator', session, now)
  session.responder = newSlot('responder', session, now)
  session.initiator.other = session.responder
  session.responder.other = session.initiator
  return session
}

function newSlot(name: SlotName, session: Session, now: number): Slot {
  const rate = session.limits.bytesPerSecond
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
    bytesOut: 0,
    flushQueued: false,
    waitTimer: null,
    bucket: rate === null ? null : newBucket(rate, rate, now),
  }
}

export function stateOf(session: Session): SessionState {
  if (session.closed) return 'closed'
  const connected = (session.initiator.peer === null ? 0 : 1) + (session.responder.peer === null ? 0 : 1)
  return connected === 0 ? 'pending' : connected === 1 ? 'half_open' : 'open'
}

export function viewOf(session: Session): SessionView {
  return {
    id: session.id,
    state: stateOf(session),
    created_at: iso(session.createdAt),
    expires_at: iso(session.expiresAt),
    last_activity: iso(session.lastActivity),
    bytes_in: session.bytesIn,
    bytes_out: session.initiator.bytesOut + session.responder.bytesOut,
    initiator_connected: session.initiator.peer !== null,
    responder_connected: session.responder.peer !== null,
    limits: {
      max_bytes: session.limits.maxBytes,
      bytes_per_second: session.limits.bytesPerSecond,
      ttl_seconds: session.limits.ttlMs / 1000,
    },
  }
}

export function iso(ms: number): string {
  return new Date(ms).toISOString()
}
