// What no client can observe from outside: that a large message is handed to uWS as the very
// buffer it arrived in, and that a send uWS reports as dropped closes the session. The peers
// here are stand-ins for uWS WebSocket objects; everything else is the relay's own code.
import t from 'tap'
import { DIRECT_SEND_MIN_BYTES } from '@session-relay/relay/data-plane/message-costs'
import { fakePeer, unitRelay } from '../helpers/relay-unit.js'

t.test('a large message goes to the peer as the same ArrayBuffer, without a copy', async (t) => {
  const { table, forwarder, session } = unitRelay(t)
  const responder = fakePeer(session.responder, table)
  table.attach(session.responder, responder.peer)
  const message = new ArrayBuffer(DIRECT_SEND_MIN_BYTES)
  forwarder.forward(session.initiator, message, true)
  t.equal(responder.sent.length, 1)
  t.equal(responder.sent[0]!.message, message, 'the received buffer itself is sent')
  t.equal(session.responder.bytesOut, DIRECT_SEND_MIN_BYTES)
})

t.test('small messages are copied, then written in one corked batch per event-loop turn', async (t) => {
  const { table, forwarder, session } = unitRelay(t)
  const responder = fakePeer(session.responder, table)
  table.attach(session.responder, responder.peer)
  const messages = [1, 2, 3].map((n) => new Uint8Array([n]).buffer)
  for (const m of messages) forwarder.forward(session.initiator, m, false)
  t.equal(responder.sent.length, 0, 'nothing written inside the handler')
  await new Promise((resolve) => setImmediate(resolve))
  t.equal(responder.corks(), 1, 'one corked flush')
  t.same(
    responder.sent.map((s) => [...(s.message as Uint8Array)]),
    [[1], [2], [3]],
    'in order',
  )
  t.ok(
    responder.sent.every((s, i) => s.message !== messages[i] && s.isBinary === false),
    'copies, types kept',
  )
})

t.test('a turn of small messages larger than the arena keeps every byte, in order', async (t) => {
  // 3 MiB of 4000-byte messages in one turn: the 1 MiB arena grows twice, copying what it held.
  const { table, forwarder, session } = unitRelay(t, 16 * 1024 * 1024)
  const responder = fakePeer(session.responder, table)
  table.attach(session.responder, responder.peer)
  const count = 3 * 262
  for (let n = 0; n < count; n++) forwarder.forward(session.initiator, new Uint8Array(4000).fill(n % 251).buffer, true)
  await new Promise((resolve) => setImmediate(resolve))
  t.equal(responder.sent.length, count)
  const wrong = responder.sent.findIndex((s, n) => {
    const bytes = s.message as Uint8Array
    return bytes.byteLength !== 4000 || bytes[0] !== n % 251 || bytes[3999] !== n % 251
  })
  t.equal(wrong, -1, 'each message arrives whole and in its place')
})

t.test('a large message behind held ones is held too, so order is kept', async (t) => {
  const { table, forwarder, session } = unitRelay(t)
  const responder = fakePeer(session.responder, table)
  table.attach(session.responder, responder.peer)
  forwarder.forward(session.initiator, new Uint8Array([7]).buffer, true)
  forwarder.forward(session.initiator, new ArrayBuffer(DIRECT_SEND_MIN_BYTES * 2), true)
  t.equal(responder.sent.length, 0)
  await new Promise((resolve) => setImmediate(resolve))
  t.same(
    responder.sent.map((s) => (s.message as Uint8Array).byteLength),
    [1, DIRECT_SEND_MIN_BYTES * 2],
  )
})

t.test('a send uWS reports as dropped closes the session with 4003', async (t) => {
  for (const size of [1, DIRECT_SEND_MIN_BYTES]) {
    const { table, forwarder, session, metrics } = unitRelay(t)
    const initiator = fakePeer(session.initiator, table)
    const responder = fakePeer(session.responder, table, () => 2)
    table.attach(session.initiator, initiator.peer)
    table.attach(session.responder, responder.peer)
    forwarder.forward(session.initiator, new ArrayBuffer(size), true)
    await new Promise((resolve) => setImmediate(resolve))
    t.equal(session.closed, true, `${size}-byte message`)
    t.same(responder.ends, [[4003, 'receiver too slow']])
    t.same(initiator.ends, [[4003, 'receiver too slow']])
    t.equal(metrics.sessionsClosed.too_slow, 1)
  }
})
