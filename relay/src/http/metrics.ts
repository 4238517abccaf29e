import type { SessionState } from '../session/session.js'

// Counters are plain numbers bumped on the hot path; the text format is built only on scrape.

const ATTACH_REFUSALS = ['bad_request', 'origin', 'unauthorized', 'not_found', 'conflict', 'rate_limited'] as const
export type AttachRefusal = (typeof ATTACH_REFUSALS)[number]

const CLOSE_REASONS = ['deleted', 'expired', 'peer_closed', 'peer_wait', 'too_slow', 'byte_limit', 'shutdown'] as const
export type CloseReason = (typeof CLOSE_REASONS)[number]

/** Admin requests refused by an admission limit: the 429s, the 503 of a full table and the 503 of a drain. */
const ADMIN_REFUSALS = ['auth_failures', 'create_rate', 'caller_sessions', 'sessions_full', 'draining'] as const
type AdminRefusal = (typeof ADMIN_REFUSALS)[number]

/** A session's two directions, named by the slot their messages are bound for. */
type Directions = { initiator: number; responder: number }
const DIRECTION_LABELS = { responder: 'initiator_to_responder', initiator: 'responder_to_initiator' } as const

export type Metrics = {
  sessionsCreated: number
  attachRefused: Record<AttachRefusal, number>
  adminRefused: Record<AdminRefusal, number>
  sessionsClosed: Record<CloseReason, number>
  messagesForwarded: number
  bytesForwarded: number
  framesTooBig: number
  /** Times a direction of a rate-limited session began holding messages for its rate. */
  rateHeld: Directions
}

export function createMetrics(): Metrics {
  return {
    sessionsCreated: 0,
    attachRefused: zeroes(ATTACH_REFUSALS),
    adminRefused: zeroes(ADMIN_REFUSALS),
    sessionsClosed: zeroes(CLOSE_REASONS),
    messagesForwarded: 0,
    bytesForwarded: 0,
    framesTooBig: 0,
    rateHeld: { initiator: 0, responder: 0 },
  }
}

export type Gauges = {
  sessionsByState: Record<SessionState, number>
  backlogBytes: number
  connections: number
  /** Sessions whose direction holds messages for its rate limit right now. */
  rateHeld: Directions
}

export function renderMetrics(m: Metrics, g: Gauges): string {
  const lines: string[] = []
  const family = (name: string, type: string, help: string, samples: Array<[string, number]>): void => {
    lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`)
    for (const [labels, value] of samples) lines.push(`${name}${labels} ${value}`)
  }
  const labelled = <K extends string>(label: string, values: Record<K, number>): Array<[string, number]> =>
    Object.entries<number>(values).map(([k, v]) => [`{${label}="${k}"}`, v])

  family('relay_sessions', 'gauge', 'Sessions in the table by state.', labelled('state', g.sessionsByState))
  family('relay_sessions_created_total', 'counter', 'Sessions created.', [['', m.sessionsCreated]])
  family('relay_sessions_closed_total', 'counter', 'Sessions closed, by reason.', labelled('reason', m.sessionsClosed))
  family(
    'relay_attach_refused_total',
    'counter',
    'WebSocket attaches refused, by reason.',
    labelled('reason', m.attachRefused),
  )
  family(
    'relay_admin_refused_total',
    'counter',
    'Admin requests refused by an admission limit, by reason.',
    labelled('reason', m.adminRefused),
  )
  family('relay_connections', 'gauge', 'Attached WebSocket peers.', [['', g.connections]])
  family('relay_messages_forwarded_total', 'counter', 'Messages handed to a peer.', [['', m.messagesForwarded]])
  family('relay_bytes_forwarded_total', 'counter', 'Payload bytes handed to a peer.', [['', m.bytesForwarded]])
  family('relay_frames_too_big_total', 'counter', 'Connections closed for a message above the frame size limit.', [
    ['', m.framesTooBig],
  ])
  const directions = (values: Directions): Array<[string, number]> =>
    (['responder', 'initiator'] as const).map((slot) => [`{direction="${DIRECTION_LABELS[slot]}"}`, values[slot]])
  family(
    'relay_sessions_rate_held',
    'gauge',
    'Sessions holding messages of a direction for its rate limit (bytes_per_second) right now: paused by it.',
    directions(g.rateHeld),
  )
  family(
    'relay_rate_held_total',
    'counter',
    'Times a direction of a session began holding messages for its rate limit.',
    directions(m.rateHeld),
  )
  family(
    'relay_outgoing_backlog_bytes',
    'gauge',
    'Bytes waiting to be written to peers: socket buffers, and messages the relay holds or queues at what they cost in memory (payload plus per-message overhead).',
    [['', g.backlogBytes]],
  )
  return lines.join('\n') + '\n'
}

function zeroes<K extends string>(keys: readonly K[]): Record<K, number> {
  return Object.fromEntries(keys.map((k) => [k, 0])) as Record<K, number>
}
