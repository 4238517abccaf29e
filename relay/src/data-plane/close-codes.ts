// Every WebSocket close code the relay sends or acts on, in one place (decisions.md, "Session
// states and close codes"). docs/relay.md's close-code table is this table; test/relay/close-codes.test.ts
// keeps the two equal and keeps numeric close codes out of every other source file.

export type CloseFrame = {
  code: number
  /** The close frame's reason text. */
  message: string
}

export type CloseCode = CloseFrame & {
  name: string
  /** When a peer gets it, for docs/relay.md. */
  meaning: string
}

export const CLOSE_CODES = {
  deleted: {
    code: 4000,
    name: 'deleted',
    message: 'session deleted',
    meaning: 'the session was deleted through `DELETE /admin/sessions/{id}`',
  },
  expired: {
    code: 4001,
    name: 'expired',
    message: 'session expired',
    meaning: 'the session reached its `expires_at`',
  },
  peerWait: {
    code: 4002,
    name: 'peer_wait',
    message: 'peer did not arrive',
    meaning: 'a slot stayed empty for the peer-wait duration after the session had a peer',
  },
  tooSlow: {
    code: 4003,
    name: 'too_slow',
    message: 'receiver too slow',
    meaning:
      'a backlog passed `--max-backlog` or `--max-total-backlog`, or uWebSockets.js dropped a send; both peers get it',
  },
  byteLimit: {
    code: 4004,
    name: 'byte_limit',
    message: 'session byte limit reached',
    meaning:
      "a message would have taken the bytes both peers sent past the session's `max_bytes`; it is not forwarded, and both peers get it",
  },
  shutdown: {
    code: 1001,
    name: 'shutdown',
    message: 'relay shutting down',
    meaning: 'the relay is stopping (SIGTERM or SIGINT)',
  },
  abnormal: {
    code: 1006,
    name: 'abnormal',
    message: '',
    meaning:
      'never sent (RFC 6455): what uWebSockets.js reports, and a peer sees, for a connection lost without a close frame, a message above `--max-frame-size`, a protocol violation, or a closed connection that did not read its close frame in time; the relay treats it as a drop',
  },
} as const satisfies Record<string, CloseCode>
