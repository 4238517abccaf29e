// Memory the limits must see (issue 14, items 2 and 3): a held message costs its payload plus
// the memory of keeping it, so a flood of empty messages for an absent peer meets --max-backlog
// and --max-total-backlog like any other, and the backlog gauge shows it; a peer that pings and
// never reads has its pongs counted against the same limit, so its session closes with 4003
// before uWS buffers more for it than --max-backlog.
import { once } from 'node:events'
import { randomBytes } from 'node:crypto'
import type { Socket } from 'node:net'
import t from 'tap'
import { HELD_MESSAGE_OVERHEAD, QUEUED_MESSAGE_OVERHEAD } from '@session-relay/relay/data-plane/message-costs'
import { frame, rawUpgrade } from '../helpers/raw-websocket.js'
import { fakePeer, unitRelay } from '../helpers/relay-unit.js'
import { attach, backlogGauge, createSession, getSession, startTestRelay } from '../helpers/relay.js'
import type { TestPeer } from '../helpers/relay.js'

const LIMIT = 64 * 1024
const EMPTY = Buffer.alloc(0)
/** A pong the relay writes for a ping of the largest control payload: 2 bytes of header, 125 of payload. */
const LARGEST_PONG = 127
const TOO_SLOW = { code: 4003, reason: 'receiver too slow' }

t.test(
  'empty messages for an absent peer: the gauge shows their cost, and past --max-backlog the sender gets 4003',
  async (t) => {
    const relay = await startTestRelay(t, ['--no-auth', '--max-backlog', String(LIMIT)])
    const session = await createSession(relay)
    const sender = await attach(`${relay.ws}/relay/${session.id}`, { token: session.initiator_token })
    const fit = Math.floor(LIMIT / HELD_MESSAGE_OVERHEAD)
    for (let i = 0; i < fit; i++) sender.socket.send(EMPTY)
    await roundTrip(sender)
    t.equal(
      await backlogGauge(relay),
      fit * HELD_MESSAGE_OVERHEAD,
      `${fit} empty messages held: the gauge counts each at its overhead`,
    )
    t.equal((await getSession(relay, session.id)).body.state, 'half_open', 'within the limit the session stays')
    sender.socket.send(EMPTY) // its cost passes the limit
    t.same(await outcome(sender), TOO_SLOW, 'one more empty message: 4003')
    t.equal(await backlogGauge(relay), 0, 'what it held is released')
  },
)

t.test(
  'empty messages from several senders: past --max-total-backlog the largest backlog closes with 4003',
  async (t) => {
    const total = 96 * 1024
    const relay = await startTestRelay(t, [
      '--no-auth',
      '--max-backlog',
      String(LIMIT),
      '--max-total-backlog',
      String(total),
    ])
    const senders: TestPeer[] = []
    for (let i = 0; i < 3; i++) {
      const session = await createSession(relay)
      senders.push(await attach(`${relay.ws}/relay/${session.id}`, { token: session.initiator_token }))
    }
    const [a, b, c] = senders as [TestPeer, TestPeer, TestPeer]
    // a and b hold 60% and 40% of one connection's limit; c then crosses the total with less than a.
    const counts = [
      Math.floor((0.6 * LIMIT) / HELD_MESSAGE_OVERHEAD),
      Math.floor((0.4 * LIMIT) / HELD_MESSAGE_OVERHEAD),
    ]
    counts.push(Math.floor(total / HELD_MESSAGE_OVERHEAD) - counts[0]! - counts[1]! + 1)
    t.ok(
      counts[2]! < counts[0]! && counts[2]! * HELD_MESSAGE_OVERHEAD <= LIMIT,
      `c (${counts[2]}) holds less than a (${counts[0]}) and fits its own limit`,
    )
    for (const [i, sender] of [a, b].entries()) {
      for (let n = 0; n < counts[i]!; n++) sender.socket.send(EMPTY)
      await roundTrip(sender)
    }
    t.equal(
      await backlogGauge(relay),
      (counts[0]! + counts[1]!) * HELD_MESSAGE_OVERHEAD,
      'the gauge counts both floods at their overhead',
    )
    for (let n = 0; n < counts[2]!; n++) c.socket.send(EMPTY)
    await roundTrip(c)
    t.same(await outcome(a), TOO_SLOW, 'the largest backlog closes, though c sent last')
    t.equal(await outcome(b), 'open', 'b stays')
    t.equal(await outcome(c), 'open', 'c stays')
    t.equal(
      await backlogGauge(relay),
      (counts[1]! + counts[2]!) * HELD_MESSAGE_OVERHEAD,
      'what b and c hold still counts',
    )
  },
)

t.test(
  'a peer that pings and never reads: its session closes with 4003 before its pongs pass --max-backlog',
  async (t) => {
    const relay = await startTestRelay(t, ['--no-auth', '--max-backlog', String(LIMIT)])
    const session = await createSession(relay)
    const counterpart = await attach(`${relay.ws}/relay/${session.id}`, { token: session.responder_token })
    const pinger = await rawUpgrade(relay.port, `/relay/${session.id}`, session.initiator_token)
    pinger.socket.pause() // never reads: the pongs back up in the kernel's buffers, then in uWS's
    // Each batch of pings ends with a message for the counterpart: once it arrives, the relay has
    // answered every ping before it, and its count of what it owes the pinger can be read.
    const pings = Buffer.concat(Array.from({ length: 64 }, () => frame(0x9, randomBytes(125))))
    let peak = 0
    let ending: { code: number; reason: string } | 'still open' = 'still open'
    // 16 MiB of pings: several times what the loopback buffers take before uWS buffers any.
    for (let batch = 1; batch * pings.length < 16 * 1024 * 1024; batch++) {
      await write(pinger.socket, Buffer.concat([pings, frame(0x1, Buffer.from(String(batch)))]))
      const got = await Promise.race([counterpart.closed, counterpart.receive(batch)])
      if (!Array.isArray(got)) {
        ending = got
        break
      }
      peak = Math.max(peak, relay.backlogBytes())
    }
    t.same(ending, TOO_SLOW, 'the counterpart gets 4003')
    if (ending === 'still open') {
      pinger.socket.destroy()
    } else {
      // Closed, the pinger still owes its pongs and its close frame; pinging on instead of
      // reading, it owes more than a live connection may, and is dropped.
      const ended = new Promise<void>((resolve) => pinger.socket.once('close', () => resolve()))
      while (!pinger.socket.destroyed) await write(pinger.socket, pings)
      await ended
      t.pass('the relay drops the pinger that keeps pinging after its close')
    }
    t.ok(
      peak > LIMIT / 2,
      `the pongs were counted as they backed up: ${peak} bytes after the last batch before the close`,
    )
    t.ok(peak <= LIMIT + LARGEST_PONG, `and never past ${LIMIT} by more than one pong`)
    t.equal(relay.backlogBytes(), 0, 'nothing it owed counts any more')
    t.match(await (await fetch(`${relay.http}/metrics`)).text(), /relay_sessions_closed_total\{reason="too_slow"\} 1/)
  },
)

t.test(
  'empty messages queued in one turn for an attached peer cost their bookkeeping: past the limit, 4003',
  async (t) => {
    const { table, forwarder, session } = unitRelay(t, 100 * QUEUED_MESSAGE_OVERHEAD)
    const sender = fakePeer(session.initiator, table)
    const receiver = fakePeer(session.responder, table)
    table.attach(session.initiator, sender.peer)
    table.attach(session.responder, receiver.peer)
    for (let i = 0; i < 100; i++) forwarder.forward(session.initiator, new ArrayBuffer(0), true)
    t.equal(table.backlog.total, 100 * QUEUED_MESSAGE_OVERHEAD, 'each costs its place in the queue')
    t.notOk(session.closed, 'at the limit')
    forwarder.forward(session.initiator, new ArrayBuffer(0), true)
    t.ok(session.closed, 'one past it closes the session')
    t.same(sender.ends, [[4003, 'receiver too slow']], 'with 4003')
    t.equal(table.backlog.total, 0)
  },
)

t.test("queued messages whose peer is lost before the flush become held ones, at a held message's cost", async (t) => {
  const { table, forwarder, session } = unitRelay(t, 10 * HELD_MESSAGE_OVERHEAD)
  const sender = fakePeer(session.initiator, table)
  const receiver = fakePeer(session.responder, table)
  table.attach(session.initiator, sender.peer)
  table.attach(session.responder, receiver.peer)
  for (let i = 0; i < 10; i++) forwarder.forward(session.initiator, new ArrayBuffer(0), true)
  table.releasePeer(session.responder)
  table.dropped(session.responder, 'connection lost')
  await new Promise((resolve) => setImmediate(resolve))
  t.equal(table.backlog.total, 10 * HELD_MESSAGE_OVERHEAD, 'ten held empty messages')
  t.notOk(session.closed, 'at the limit')
  forwarder.forward(session.initiator, new ArrayBuffer(0), true)
  t.same(sender.ends, [[4003, 'receiver too slow']], 'one more held: 4003')
  t.equal(table.backlog.total, 0)
})

t.test('a turn of queued messages that costs more once held closes the session when the peer is lost', async (t) => {
  const { table, forwarder, session } = unitRelay(t, 10 * HELD_MESSAGE_OVERHEAD)
  const sender = fakePeer(session.initiator, table)
  const receiver = fakePeer(session.responder, table)
  table.attach(session.initiator, sender.peer)
  table.attach(session.responder, receiver.peer)
  for (let i = 0; i < 11; i++) forwarder.forward(session.initiator, new ArrayBuffer(0), true)
  t.notOk(session.closed, 'queued, eleven fit')
  table.releasePeer(session.responder)
  table.dropped(session.responder, 'connection lost')
  await new Promise((resolve) => setImmediate(resolve))
  t.same(sender.ends, [[4003, 'receiver too slow']], 'held, they do not: 4003')
  t.equal(table.backlog.total, 0)
})

t.test('a closed peer that pings instead of reading: its pongs count, and past the limit it is dropped', async (t) => {
  const { table, forwarder, session } = unitRelay(t, 1000)
  const pinger = fakePeer(session.initiator, table)
  table.attach(session.initiator, pinger.peer)
  pinger.buffered = 600
  forwarder.pinged(pinger.peer)
  t.equal(table.backlog.total, 600, "a live peer's pongs count")
  table.close(session, { reason: 'deleted', frame: { code: 4000, message: 'session deleted' }, remove: false })
  t.equal(table.backlog.total, 600, 'closed, it owes them before its close frame')
  pinger.buffered = 900
  forwarder.pinged(pinger.peer)
  t.equal(table.backlog.total, 900, 'the pongs it gets while closed count too')
  t.equal(pinger.closes(), 0, 'within the limit it may still read its close frame')
  pinger.buffered = 1001
  forwarder.pinged(pinger.peer)
  t.equal(pinger.closes(), 1, 'past the limit it is dropped')
  t.equal(table.backlog.total, 0, 'and what it owed no longer counts')
})

/** A ping answered: every message the peer sent before it has been through the relay. */
function roundTrip(peer: TestPeer): Promise<void> {
  const pong = once(peer.socket, 'pong').then(() => {})
  peer.socket.ping()
  return pong
}

/** Whether the relay closed the peer (its code and reason) or it still answers a ping ('open'). */
function outcome(peer: TestPeer): Promise<{ code: number; reason: string } | 'open'> {
  return Promise.race([peer.closed, roundTrip(peer).then(() => 'open' as const)])
}

/** Write, then wait until the socket takes more or is gone (the relay reset it). */
function write(socket: Socket, bytes: Buffer): Promise<void> {
  if (socket.destroyed) return Promise.resolve()
  if (socket.write(bytes)) return new Promise((resolve) => setImmediate(resolve))
  return new Promise((resolve) => {
    const go = (): void => {
      socket.off('drain', go)
      socket.off('close', go)
      resolve()
    }
    socket.on('drain', go)
    socket.on('close', go)
  })
}
