// Reconnect: a peer whose socket is destroyed without a close frame reattaches within peer-wait
// and receives, in order and byte for byte, everything its counterpart sent meanwhile: small
// messages and large ones, text and binary, up to the backlog limit; one byte past it closes
// the session with 4003 rather than dropping anything. Also the case no client can time: small
// messages already copied for this turn's write when the drop is noticed become held messages.
import { randomBytes } from 'node:crypto'
import t from 'tap'
import { HELD_MESSAGE_OVERHEAD } from '@session-relay/relay/data-plane/message-costs'
import { fakePeer, unitRelay } from '../helpers/relay-unit.js'
import { attach, getSession, pair, startTestRelay, until } from '../helpers/relay.js'

t.test(
  'a dropped peer gets everything sent meanwhile, in order, across sizes and types, up to the limit',
  async (t) => {
    const limit = 512 * 1024
    const relay = await startTestRelay(t, ['--no-auth', '--peer-wait', '10s', '--max-backlog', String(limit)])
    const { session, initiator, responder } = await pair(relay)
    initiator.socket.send('before the drop')
    await responder.receive(1)

    let current = responder
    for (let round = 0; round < 3; round++) {
      current.socket.terminate() // no close frame: a drop
      await until(
        async () => (await getSession(relay, session.id)).body.responder_connected === false,
        2000,
        'the drop to be noticed',
      )
      const sent: Array<{ data: Buffer; isBinary: boolean }> = []
      let bytes = 0
      for (let i = 0; bytes < limit - 70_000; i++) {
        const size = [1, 16, 1000, 4095, 4096, 20_000, 65_536][i % 7]!
        const isBinary = i % 3 !== 0
        const data = isBinary ? randomBytes(size) : Buffer.from(randomBytes(size).toString('base64').slice(0, size))
        sent.push({ data, isBinary })
        bytes += size
        initiator.socket.send(data, { binary: isBinary })
      }
      current = await attach(`${relay.ws}/relay/${session.id}`, { token: session.responder_token })
      const got = await current.receive(sent.length)
      t.equal(got.length, sent.length, `round ${round}: ${sent.length} messages (${bytes} bytes) held and delivered`)
      t.ok(
        got.every((m, i) => m.isBinary === sent[i]!.isBinary && m.data.equals(sent[i]!.data)),
        `round ${round}: in order, byte-exact, types kept`,
      )
      current.socket.send(`ack ${round}`)
      t.equal(
        (await initiator.receive(round + 1))[round]!.data.toString(),
        `ack ${round}`,
        `round ${round}: the other way works too`,
      )
      t.equal((await getSession(relay, session.id)).body.state, 'open')
    }

    // Past the limit while away: the relay closes the session; it never drops silently.
    current.socket.terminate()
    await until(
      async () => (await getSession(relay, session.id)).body.responder_connected === false,
      2000,
      'the drop to be noticed',
    )
    // Each held message costs its payload plus HELD_MESSAGE_OVERHEAD: these two come to the limit and one byte.
    initiator.socket.send(randomBytes(limit / 2 - HELD_MESSAGE_OVERHEAD))
    initiator.socket.send(randomBytes(limit / 2 - HELD_MESSAGE_OVERHEAD + 1))
    t.same(
      await initiator.closed,
      { code: 4003, reason: 'receiver too slow' },
      'one byte past the limit while away: 4003',
    )
  },
)
t.test(
  "messages already queued for this turn's write when the drop is noticed are held, ahead of later ones",
  async (t) => {
    const { table, forwarder, session } = unitRelay(t)
    const initiator = fakePeer(session.initiator, table)
    const first = fakePeer(session.responder, table)
    table.attach(session.initiator, initiator.peer)
    table.attach(session.responder, first.peer)

    const bytes = (n: number): ArrayBuffer => new Uint8Array([n]).buffer
    forwarder.forward(session.initiator, bytes(1), true)
    forwarder.forward(session.initiator, bytes(2), false)
    // The connection is lost in the same turn, before the arena is written out.
    table.releasePeer(session.responder)
    table.dropped(session.responder, 'connection lost')
    forwarder.forward(session.initiator, bytes(3), true)
    await new Promise((resolve) => setImmediate(resolve))
    t.equal(first.sent.length, 0, 'nothing was written to the lost connection')
    forwarder.forward(session.initiator, bytes(4), false)

    const second = fakePeer(session.responder, table)
    table.attach(session.responder, second.peer)
    forwarder.deliverHeld(session.responder)
    t.same(
      second.sent.map((s) => [[...s.data], s.isBinary]),
      [
        [[1], true],
        [[2], false],
        [[3], true],
        [[4], false],
      ],
      'all four, in order, types kept',
    )
    t.equal(table.backlog.total, 0, 'the backlog accounting returns to zero')
  },
)
