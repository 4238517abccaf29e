// The relay's session table and forwarder without uWS: real relay code around stand-ins for
// uWS WebSocket objects, for what no client can observe from outside (which buffer is sent,
// how many corked writes, what a closed connection is counted at).
import type { Test } from 'tap'
import { createForwarder } from '@session-relay/relay/data-plane/forwarding'
import { createMetrics } from '@session-relay/relay/http/metrics'
import { createLogger } from '@session-relay/relay/logger'
import type { Peer, PeerData, Slot } from '@session-relay/relay/session/session'
import type { SessionTable } from '@session-relay/relay/session/table'
import { createSessionTable } from '@session-relay/relay/session/table'

/** A table with one session and a forwarder whose total backlog limit is four connections' worth. Stopped when the test ends. */
export function unitRelay(t: Test, maxBacklog = 1024 * 1024) {
  const metrics = createMetrics()
  const table = createSessionTable({
    ttlMs: 60_000,
    peerWaitMs: 60_000,
    reapIntervalMs: 60_000,
    logger: createLogger('silent'),
    metrics,
  })
  t.teardown(() => table.closeAll('shutdown', { code: 1001, message: 'test over' }))
  const forwarder = createForwarder(table, { maxBacklog, maxTotalBacklog: 4 * maxBacklog, metrics })
  const { session } = table.create('address:127.0.0.1')
  return { table, forwarder, session, metrics }
}

/** What the relay handed a fake peer's send(): the object itself, and a copy of its bytes then (the arena is reused). */
type Sent = { message: unknown; data: Uint8Array; isBinary: boolean }

export type FakePeer = {
  peer: Peer
  sent: Sent[]
  /** Close frames the relay ended it with: code and reason. */
  ends: Array<[number, string]>
  /** What getBufferedAmount() answers; the test sets it. */
  buffered: number
  corks(): number
  /** Times the relay dropped it without a close frame. */
  closes(): number
}

/**
 * A stand-in for a uWS WebSocket on `slot`. send() answers what `answer` says (1 sent, 2
 * dropped); close() runs the relay's close path for a connection it closed, as uWS does.
 */
export function fakePeer(slot: Slot, table: SessionTable, answer: () => number = () => 1): FakePeer {
  const data: PeerData = { slot, ended: false }
  let corked = 0
  let closed = 0
  const fake: FakePeer = {
    peer: undefined as unknown as Peer,
    sent: [],
    ends: [],
    buffered: 0,
    corks: () => corked,
    closes: () => closed,
  }
  fake.peer = {
    getUserData: () => data,
    send: (message: ArrayBuffer | Uint8Array, isBinary: boolean) => {
      fake.sent.push({ message, data: new Uint8Array(message).slice(), isBinary })
      return answer()
    },
    getBufferedAmount: () => fake.buffered,
    cork: (fn: () => void) => {
      corked++
      fn()
    },
    end: (code: number, message: string | Uint8Array) => {
      fake.ends.push([code, Buffer.from(message).toString()])
    },
    close: () => {
      closed++
      table.closingGone(fake.peer)
    },
  } as unknown as Peer
  return fake
}
