// A peer's messages and its close frame arrive at the counterpart in the order sent, even when
// the relay reads them in one turn (found by the client's `relay attach`: its last ack and its
// close went out together, and the ack was lost).
import t from 'tap'
import { pair, startTestRelay } from '../helpers/relay.js'

t.test('messages sent just before a close frame reach the counterpart before the close', async (t) => {
  const relay = await startTestRelay(t)
  for (let run = 0; run < 20; run++) {
    const { initiator, responder } = await pair(relay)
    initiator.socket.send('a')
    initiator.socket.send(Buffer.from('b'))
    initiator.socket.close(1000, 'done')
    t.same(await responder.closed, { code: 1000, reason: 'done' })
    t.same(
      responder.received.map((m) => [m.data.toString(), m.isBinary]),
      [
        ['a', false],
        ['b', true],
      ],
      `run ${run}`,
    )
  }
})
