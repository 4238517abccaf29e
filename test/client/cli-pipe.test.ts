// relay attach between two processes: a byte stream with its checksum, bounded memory, a slow
// reader that slows the sender instead of overrunning the relay, exit codes.
import { createHash, randomBytes } from 'node:crypto'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import t from 'tap'
import { collect, runCli } from '../helpers/client-cli.js'
import { createSession, delay, getSession, startTestRelay, until } from '../helpers/relay.js'
import { cuttableProxy } from '../helpers/tcp-proxy.js'

const MiB = 1024 * 1024

/** `total` bytes of random data in 1 MiB chunks, hashed as they are made. */
function source(total: number): { stream: Readable; digest: () => string } {
  const hash = createHash('sha256')
  let left = total
  const stream = new Readable({
    read() {
      if (left === 0) {
        this.push(null)
        return
      }
      const chunk = randomBytes(Math.min(MiB, left))
      left -= chunk.length
      hash.update(chunk)
      this.push(chunk)
    },
  })
  return { stream, digest: () => hash.digest('hex') }
}

async function digestOf(stream: Readable): Promise<{ digest: string; bytes: number }> {
  const hash = createHash('sha256')
  let bytes = 0
  for await (const chunk of stream) {
    hash.update(chunk as Buffer)
    bytes += (chunk as Buffer).length
  }
  return { digest: hash.digest('hex'), bytes }
}

t.test(
  '100 MiB through two relay attach processes arrive byte for byte, in bounded memory, and both exit 0',
  async (t) => {
    const relay = await startTestRelay(t, ['--no-auth', '--log-level', 'warn'])
    const session = await createSession(relay)
    const url = `${relay.ws}/relay/${session.id}`
    const sender = runCli(t, ['attach', url, `--token=${session.initiator_token}`])
    const receiver = runCli(t, ['attach', url], { RELAY_TOKEN: session.responder_token })
    receiver.child.stdin.end()
    const data = source(100 * MiB)
    const [, received, senderCode, receiverCode] = await Promise.all([
      pipeline(data.stream, sender.child.stdin),
      digestOf(receiver.child.stdout),
      sender.exited,
      receiver.exited,
    ])
    t.equal(received.bytes, 100 * MiB)
    t.equal(received.digest, data.digest(), 'sha256 equal on both sides')
    t.equal(senderCode, 0, `sender exit 0 (${sender.stderr()})`)
    t.equal(receiverCode, 0, `receiver exit 0 (${receiver.stderr()})`)
    // Its speed is bench/client-pipe.ts's to measure (npm run bench:client), against raw ws peers.
    t.comment(
      `peak RSS sender ${(sender.peakRss() / MiB).toFixed(0)} MiB, receiver ${(receiver.peakRss() / MiB).toFixed(0)} MiB`,
    )
    // Node itself takes ~50 MiB; the stream may add its 4 MiB window and buffers, not the 100 MiB.
    t.ok(sender.peakRss() < 150 * MiB, 'sender memory bounded')
    t.ok(receiver.peakRss() < 150 * MiB, 'receiver memory bounded')
  },
)

t.test('a reader that stops for a while slows the sender; the relay never has to close the session', async (t) => {
  // A backlog limit the sender would pass at once without the acknowledgement window.
  const relay = await startTestRelay(t, ['--no-auth', '--log-level', 'warn', '--max-backlog', '6MiB'])
  const session = await createSession(relay)
  const url = `${relay.ws}/relay/${session.id}`
  const sender = runCli(t, ['attach', url, `--token=${session.initiator_token}`])
  const receiver = runCli(t, ['attach', url, `--token=${session.responder_token}`])
  receiver.child.stdin.end()
  receiver.child.stdout.pause()
  const data = source(40 * MiB)
  const sending = pipeline(data.stream, sender.child.stdin).catch((error: unknown) => {
    t.fail(`sender: ${String(error)}: ${sender.stderr()} / receiver: ${receiver.stderr()}`)
  })
  // stdout unread for a second: the receiver cannot write, so it stops acknowledging
  await delay(1000)
  const received = digestOf(receiver.child.stdout)
  await sending
  t.equal((await received).digest, data.digest(), 'nothing dropped')
  t.equal(await sender.exited, 0, sender.stderr())
  t.equal(await receiver.exited, 0, receiver.stderr())
})

t.test(
  'a drop in the middle of a stream: the sender reattaches and resends what was lost, byte for byte',
  async (t) => {
    const relay = await startTestRelay(t, ['--no-auth', '--log-level', 'warn'])
    const proxy = await cuttableProxy(t, relay.port)
    const session = await createSession(relay)
    const sender = runCli(t, [
      'attach',
      `ws://127.0.0.1:${proxy.port}/relay/${session.id}`,
      `--token=${session.initiator_token}`,
    ])
    const receiver = runCli(t, ['attach', `${relay.ws}/relay/${session.id}`, `--token=${session.responder_token}`])
    receiver.child.stdin.end()
    const data = source(30 * MiB)
    const sending = pipeline(data.stream, sender.child.stdin)
    const hash = createHash('sha256')
    let bytes = 0
    let cut = false
    for await (const chunk of receiver.child.stdout) {
      hash.update(chunk as Buffer)
      bytes += (chunk as Buffer).length
      if (!cut && bytes > 5 * MiB) {
        cut = true
        proxy.cut()
      }
    }
    await sending
    t.ok(cut, 'the connection was cut mid-stream')
    t.equal(bytes, 30 * MiB)
    t.equal(hash.digest('hex'), data.digest())
    t.equal(await sender.exited, 0, sender.stderr())
    t.equal(await receiver.exited, 0, receiver.stderr())
  },
)

t.test('a receiver whose stdout closes early exits 1, and so does the sender, told by the close', async (t) => {
  const relay = await startTestRelay(t, ['--no-auth', '--log-level', 'warn'])
  const session = await createSession(relay)
  const url = `${relay.ws}/relay/${session.id}`
  const sender = runCli(t, ['attach', url, `--token=${session.initiator_token}`])
  const receiver = runCli(t, ['attach', url, `--token=${session.responder_token}`])
  receiver.child.stdin.end()
  const sending = pipeline(source(20 * MiB).stream, sender.child.stdin).catch(() => {})
  // the reader goes away after its first bytes, as `| head -c 1` would
  receiver.child.stdout.once('data', () => receiver.child.stdout.destroy())
  t.equal(await receiver.exited, 1)
  t.match(receiver.stderr(), /stdout was closed/)
  t.equal(await sender.exited, 1, sender.stderr())
  t.match(sender.stderr(), /peer closed before everything was delivered/)
  await sending
})

t.test('--text sends lines as text messages; the side whose stdin ends closes and both exit 0', async (t) => {
  const relay = await startTestRelay(t, ['--no-auth', '--log-level', 'warn'])
  const session = await createSession(relay)
  const url = `${relay.ws}/relay/${session.id}`
  const receiver = runCli(t, ['attach', url, `--token=${session.responder_token}`, '--text'])
  // in line mode the end of stdin closes the session at once: the other side must be there
  await until(async () => (await getSession(relay, session.id)).body.responder_connected === true)
  const sender = runCli(t, ['attach', url, `--token=${session.initiator_token}`, '--text'])
  sender.child.stdin.end('hello\nworld\n')
  const out = collect(receiver.child.stdout)
  // the sender first: if it failed, the receiver would wait for it until the test's timeout
  const senderCode = await sender.exited
  t.equal(senderCode, 0, sender.stderr())
  if (senderCode !== 0) receiver.child.kill()
  t.equal((await out).toString(), 'hello\nworld\n', receiver.stderr())
  t.equal(await receiver.exited, 0)
})

t.test('exit codes: a refused attach is 1 with the reason, a usage error 2, --help 0', async (t) => {
  const relay = await startTestRelay(t, ['--no-auth', '--log-level', 'warn'])
  const session = await createSession(relay)
  const wrong = runCli(t, ['attach', `${relay.ws}/relay/${session.id}`, '--token', 'not-the-token'])
  wrong.child.stdin.end()
  t.equal(await wrong.exited, 1)
  t.match(wrong.stderr(), /attach: 401/)
  const usage = runCli(t, ['attach'])
  t.equal(await usage.exited, 2)
  t.match(usage.stderr(), /needs one URL/)
  for (const command of [[], ['login'], ['session'], ['attach'], ['pair']]) {
    const help = runCli(t, [...command, '--help'])
    const [out, code] = await Promise.all([collect(help.child.stdout), help.exited])
    t.equal(code, 0, `${command.join(' ')} --help`)
    t.match(out.toString(), /Usage/)
  }
})
