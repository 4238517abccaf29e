// Slow receivers, bounded to what a test may do (the 256 MiB run and its RSS figures are
// bench/slow-receiver.ts): receivers that stop reading get their sessions closed with 4003 on
// both peers, the relay's backlog never passes --max-total-backlog however many stop at once,
// and a session beside them keeps flowing, in order.
import { randomBytes } from 'node:crypto'
import t from 'tap'
import { CLOSE_GRACE_MS } from '@session-relay/relay/session/closing'
import { backlogGauge, createSession, drained, pair, startTestRelay, turn } from '../helpers/relay.js'
import { until } from '../helpers/wait.js'
import type { TestPeer } from '../helpers/relay.js'

const CHUNK = randomBytes(64 * 1024)

t.test('one receiver stops reading: both peers get 4003, a session beside it keeps flowing', async (t) => {
  const relay = await startTestRelay(t, ['--no-auth', '--max-backlog', '256KiB'])
  const slow = await pair(relay)
  const healthy = await pair(relay)
  const flowing = keepFlowing(healthy)
  pause(slow.responder)
  const pushed = push(slow.initiator)
  t.same(await slow.initiator.closed, { code: 4003, reason: 'receiver too slow' }, 'the sender')
  t.ok((await pushed) > 256 * 1024, 'the sender got past the limit before the close')
  resume(slow.responder) // it reads everything queued before the close frame, then the frame
  t.same(await slow.responder.closed, { code: 4003, reason: 'receiver too slow' }, 'the receiver, once it reads again')
  t.ok((await flowing.stop()) > 0, 'the healthy session carried messages all along, in order')
})

t.test('many receivers stop at once: each session closes with 4003, the total backlog limit holds', async (t) => {
  const total = 1024 * 1024
  const relay = await startTestRelay(t, [
    '--no-auth',
    '--max-backlog',
    '256KiB',
    '--max-total-backlog',
    '1MiB',
    '--log-level',
    'info',
  ])
  const slow = await Promise.all(Array.from({ length: 6 }, () => pair(relay)))
  const healthy = await pair(relay)
  const flowing = keepFlowing(healthy)
  let sampling = true
  let peak = 0
  // Every turn of the event loop, which the relay shares with the clients here.
  const sampler = (async () => {
    while (sampling) {
      peak = Math.max(peak, relay.backlogBytes())
      await new Promise((resolve) => setImmediate(resolve))
    }
  })()
  for (const s of slow) pause(s.responder)
  await Promise.all(slow.map((s) => push(s.initiator)))
  sampling = false
  await sampler
  // A closed receiver's unread bytes still count against the total; when they crowd it, the
  // relay drops such a receiver without its close frame rather than close a live session, and
  // says which (a receiver slow to resume here may also pass the grace). Every other receiver
  // that reads again finds its 4003 after the data.
  let framesKept = 0
  for (const [i, s] of slow.entries()) {
    t.same(await s.initiator.closed, { code: 4003, reason: 'receiver too slow' }, `slow session ${i}: sender`)
    resume(s.responder)
    const closed = await s.responder.closed
    const drop = relay.logs.find((line) => line.msg === 'closed connection dropped' && line.session === s.session.id)
    if (drop !== undefined) {
      t.same(
        closed,
        { code: 1006, reason: '' },
        `slow session ${i}: receiver dropped (${String(drop.why)}), without a close frame`,
      )
    } else {
      t.same(closed, { code: 4003, reason: 'receiver too slow' }, `slow session ${i}: receiver`)
      framesKept++
    }
  }
  t.ok(framesKept > 0, 'receivers that read again find their 4003')
  t.ok(peak <= total, `the relay's backlog peaked at ${peak} bytes, within the ${total}-byte total`)
  t.ok(
    peak > 128 * 1024,
    "the stalled receivers' backlog was seen building (the close comes in the turn that crosses a limit)",
  )
  t.ok((await flowing.stop()) > 0, 'the healthy session carried messages all along, in order')
  t.equal(relay.backlogBytes(), 0, 'nothing is left queued')
  t.equal(await backlogGauge(relay), 0, 'and /metrics says so')
  const fresh = await createSession(relay)
  t.ok(fresh.id, 'the relay still creates sessions')
})

t.test('a closed receiver that never reads again: its bytes count until it is dropped after the grace', async (t) => {
  const relay = await startTestRelay(t, ['--no-auth', '--max-backlog', '256KiB'])
  const slow = await pair(relay)
  pause(slow.responder)
  const pushed = push(slow.initiator)
  t.same(await slow.initiator.closed, { code: 4003, reason: 'receiver too slow' }, 'the sender')
  await pushed
  t.ok((await backlogGauge(relay)) > 0, 'what the closed receiver owes still counts against the total backlog')
  await until(async () => (await backlogGauge(relay)) === 0, CLOSE_GRACE_MS + 5_000, 'the owed bytes released')
  // Released by the grace's own timer (its length is CLOSE_GRACE_MS), not by another way out.
  const drops = relay.logs.filter((line) => line.msg === 'closed connection dropped')
  t.same(
    drops.map((line) => line.why),
    ['did not read within the grace'],
    'dropped once, when the grace ran out',
  )
  resume(slow.responder)
  t.equal((await slow.responder.closed).code, 1006, 'dropped without a close frame: it never read')
  t.equal(relay.backlogBytes(), 0, 'nothing left counted')
})

/** Stop reading at the TCP level, as a receiver that hangs would. */
function pause(peer: TestPeer): void {
  ;(peer.socket as unknown as { _socket: { pause(): void } })._socket.pause()
}

function resume(peer: TestPeer): void {
  ;(peer.socket as unknown as { _socket: { resume(): void } })._socket.resume()
}

/** Send 64 KiB messages as fast as the client's own buffer allows, until closed; the bytes sent. */
async function push(peer: TestPeer): Promise<number> {
  let sent = 0
  while (peer.socket.readyState === peer.socket.OPEN) {
    if (peer.socket.bufferedAmount < 1024 * 1024) {
      peer.socket.send(CHUNK)
      sent += CHUNK.length
    } else {
      await drained(peer)
    }
    if (sent % (16 * CHUNK.length) === 0) await turn()
  }
  return sent
}

/** Small numbered messages every few ms across a healthy pair; stop() says how many arrived, failing on loss or disorder. */
function keepFlowing({ initiator, responder }: { initiator: TestPeer; responder: TestPeer }) {
  let next = 0
  const timer = setInterval(() => initiator.socket.send(String(next++)), 5)
  return {
    async stop(): Promise<number> {
      clearInterval(timer)
      const got = await responder.receive(next)
      got.forEach((m, i) => {
        if (m.data.toString() !== String(i)) throw new Error(`message ${i} arrived as ${m.data.toString()}`)
      })
      return got.length
    },
  }
}
