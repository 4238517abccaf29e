// `relay attach` against a peer that ignores the stream's window (client/src/cli/stream.ts):
// with its stdout blocked, a flood of valid frames costs it a few MiB, not the flood (the
// receiver stops reading, so the backlog waits in the relay, which bounds it with
// --max-backlog; raised here so that only the CLI's own bound is tested); a frame larger than
// the window itself closes the session with 4010 and exit 1.
import t from 'tap'
import { runCli } from '../helpers/client-cli.js'
import { attach, createSession, startTestRelay } from '../helpers/relay.js'
import type { TestPeer } from '../helpers/relay.js'

const MiB = 1024 * 1024

function dataFrame(offset: number, bytes: number): Buffer {
  const frame = Buffer.alloc(8 + bytes, 0x61)
  frame.writeBigUInt64BE(BigInt(offset), 0)
  return frame
}

/** Sends `total` bytes in 1 MiB frames, each after the last left the socket, until done or closed. */
async function flood(peer: TestPeer, total: number): Promise<number> {
  let offset = 0
  while (offset < total && peer.socket.readyState === peer.socket.OPEN) {
    const sent = await new Promise<boolean>((resolve) =>
      peer.socket.send(dataFrame(offset, MiB), (error) => resolve(error === undefined || error === null)),
    )
    if (!sent) break
    offset += MiB
  }
  return offset
}

t.test('a flood into a blocked stdout: the receiver stops reading and stays small', async (t) => {
  const relay = await startTestRelay(t, ['--no-auth', '--log-level', 'warn', '--max-backlog', '1GiB'])
  const session = await createSession(relay)
  const url = `${relay.ws}/relay/${session.id}`
  const receiver = runCli(t, ['attach', url, `--token=${session.responder_token}`])
  receiver.child.stdin.end()
  // Never read: the pipe and the parent's stream buffer fill, then every write waits.
  receiver.child.stdout.pause()
  const peer = await attach(url, { token: session.initiator_token })
  const sent = await flood(peer, 300 * MiB)
  t.equal(sent, 300 * MiB, 'the relay took the whole flood')
  const peak = receiver.peakRss()
  t.ok(peak < 250 * MiB, `the receiver's peak RSS stayed under 250 MiB (${(peak / MiB).toFixed(0)} MiB)`)
})

t.test('a frame larger than the window closes the session with 4010, and attach exits 1 saying why', async (t) => {
  const relay = await startTestRelay(t, ['--no-auth', '--log-level', 'warn'])
  const session = await createSession(relay)
  const url = `${relay.ws}/relay/${session.id}`
  const receiver = runCli(t, ['attach', url, `--token=${session.responder_token}`])
  receiver.child.stdin.end()
  receiver.child.stdout.resume()
  const peer = await attach(url, { token: session.initiator_token })
  peer.socket.send(dataFrame(0, 5 * MiB))
  t.equal((await peer.closed).code, 4010, "the peer learns the receiver's code")
  t.equal(await receiver.exited, 1)
  t.match(
    receiver.stderr(),
    /relay: the peer sent more than the window it was given \(4 MiB unacknowledged\): the session was closed with 4010/,
  )
})
