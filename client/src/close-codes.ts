// The relay's close codes (relay/src/data-plane/close-codes.ts is the source of truth; the
// client stands alone, so the numbers are copied and test/client/close-codes.test.ts keeps
// them equal).

export type CloseCodeInfo = {
  code: number
  name: string
  /** What the code means for the peer that receives it. */
  meaning: string
}

export const RELAY_CLOSE_CODES: readonly CloseCodeInfo[] = [
  { code: 4000, name: 'deleted', meaning: 'the session was deleted through the admin API' },
  { code: 4001, name: 'expired', meaning: 'the session reached its expires_at' },
  {
    code: 4002,
    name: 'peer_wait',
    meaning: 'the other peer did not arrive (or come back) within the peer-wait window',
  },
  { code: 4003, name: 'too_slow', meaning: 'a receiver fell too far behind and the relay closed the session' },
  { code: 4004, name: 'byte_limit', meaning: 'the peers sent the bytes the session allows (its max_bytes)' },
  { code: 1001, name: 'shutdown', meaning: 'the relay is shutting down' },
  { code: 1006, name: 'abnormal', meaning: 'the connection was lost without a close frame (a drop)' },
]

/** The relay's "shutting down": with a way to create sessions, the client creates its session again elsewhere. */
export const SHUTDOWN_CLOSE = 1001

/** Codes the client itself reports; never sent by the relay. */
export const NORMAL_CLOSE = 1000

export function describeClose(code: number): CloseCodeInfo {
  const known = RELAY_CLOSE_CODES.find((c) => c.code === code)
  if (known !== undefined) return known
  if (code === NORMAL_CLOSE) return { code, name: 'normal', meaning: 'a peer closed the session normally' }
  return { code, name: 'peer', meaning: 'a peer closed the session with its own code' }
}
