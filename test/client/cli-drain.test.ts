// A rolling upgrade as `relay attach` sees it: the compiled relay gets SIGTERM in the middle of
// a transfer between two `relay attach` processes, drains, and the transfer completes.
import { createHash, randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import type { Test } from 'tap'
import type { Cli } from '../helpers/client-cli.js'
import { runCli } from '../helpers/client-cli.js'
import { processRunner } from '../helpers/process.js'
import { createSession, getSession, startTestRelay, until } from '../helpers/relay.js'
import type { Created } from '../helpers/relay.js'

const MiB = 1024 * 1024
const mainJs = fileURLToPath(new URL('../../relay/dist/main.js', import.meta.url))
const { start } = processRunner({ mainJs, ownEnv: /^(RELAY_|UWS_)/, listening: 'relay listening' })

t.setTimeout(180_000)

async function create(port: number): Promise<Response> {
  return await fetch(`http://127.0.0.1:${port}/admin/sessions`, { method: 'POST' })
}

/** A sender and a receiver `relay attach`, the bytes written and read hashed as they go. */
function transfer(t: Test, url: string, session: Created, extra: { initiator?: string[]; responder?: string[] } = {}) {
  const sender = runCli(t, ['attach', url, `--token=${session.initiator_token}`, ...(extra.initiator ?? [])])
  const receiver = runCli(t, ['attach', url, `--token=${session.responder_token}`, ...(extra.responder ?? [])])
  receiver.child.stdin.end()
  const sent = createHash('sha256')
  const got = createHash('sha256')
  const state = { received: 0 }
  const receiving = (async () => {
    for await (const chunk of receiver.child.stdout) {
      got.update(chunk as Buffer)
      state.received += (chunk as Buffer).length
    }
  })()
  return {
    sender,
    receiver,
    state,
    write: (bytes: number): void => {
      for (let left = bytes; left > 0; left -= MiB) {
        const chunk = randomBytes(Math.min(MiB, left))
        sent.update(chunk)
        sender.child.stdin.write(chunk)
      }
    },
    /** Ends the sender's stdin and waits for the receiver's stdout to end. */
    finish: async (): Promise<{ sent: string; got: string; received: number }> => {
      sender.child.stdin.end()
      await receiving
      return { sent: sent.digest('hex'), got: got.digest('hex'), received: state.received }
    },
  }
}

async function exitCodes(t: Test, sender: Cli, receiver: Cli): Promise<void> {
  t.equal(await sender.exited, 0, `sender exit 0 (${sender.stderr()})`)
  t.equal(await receiver.exited, 0, `receiver exit 0 (${receiver.stderr()})`)
}

t.test(
  'a transfer spanning SIGTERM completes byte for byte, a create meanwhile gets 503, the relay exits 0 after',
  async (t) => {
    const relay = await start(t, ['--no-auth', '--addr', '127.0.0.1:0', '--log-level', 'info'])
    const session = (await (await create(relay.port)).json()) as Created
    const { sender, receiver, state, write, finish } = transfer(
      t,
      `ws://127.0.0.1:${relay.port}/relay/${session.id}`,
      session,
    )

    // The first half before the signal, the rest once the relay is draining: the transfer spans it.
    write(8 * MiB)
    await until(() => state.received > 0, 60_000, 'the first bytes through')
    relay.child.kill('SIGTERM')
    await until(() => relay.logs.some((line) => line.msg === 'draining'), 60_000, 'the relay to start draining')
    const refused = await create(relay.port)
    t.equal(refused.status, 503, 'a create during the drain answers 503')
    t.ok(refused.headers.get('retry-after'), 'with Retry-After')
    write(8 * MiB)

    const result = await finish()
    t.equal(result.received, 16 * MiB, 'every byte arrived')
    t.equal(result.got, result.sent, 'sha256 equal on both sides')
    await exitCodes(t, sender, receiver)
    t.same(await relay.exited, { code: 0, signal: null }, 'the relay exits 0 once the session ended')
    t.ok(
      relay.logs.some((line) => line.msg === 'drained'),
      'drained, not timed out',
    )
    t.notOk(
      relay.logs.some((line) => line.msg === 'session closed' && line.code === 1001),
      'no session closed with 1001',
    )
  },
)

t.test(
  'a drain that runs out: on 1001 both sides run --recreate-command and the stream goes on in the new session',
  async (t) => {
    const draining = await start(t, ['--no-auth', '--addr', '127.0.0.1:0', '--drain-timeout', '1s'])
    const other = await startTestRelay(t, ['--no-auth', '--log-level', 'warn'])
    const first = (await (await create(draining.port)).json()) as Created
    // What the two commands print: the new session, made ahead here; in real use one side
    // creates it and hands the other its token.
    const next = await createSession(other)
    const dir = mkdtempSync(join(tmpdir(), 'relay-recreate-'))
    t.teardown(() => rmSync(dir, { recursive: true, force: true }))
    const nextUrl = `${other.ws}/relay/${next.id}`
    writeFileSync(join(dir, 'initiator'), `${nextUrl} ${next.initiator_token}\n`)
    writeFileSync(join(dir, 'responder'), `${nextUrl} ${next.responder_token}\n`)
    const { sender, receiver, state, write, finish } = transfer(
      t,
      `ws://127.0.0.1:${draining.port}/relay/${first.id}`,
      first,
      {
        initiator: ['--recreate-command', `cat ${join(dir, 'initiator')}`],
        responder: ['--recreate-command', `cat ${join(dir, 'responder')}`],
      },
    )

    write(4 * MiB)
    await until(() => state.received > 0, 60_000, 'the first bytes through')
    draining.child.kill('SIGTERM')
    t.same(
      await draining.exited,
      { code: 0, signal: null },
      'the first relay closes its session with 1001 at the drain timeout and exits',
    )
    t.ok(
      draining.logs.some((line) => line.msg === 'drain timed out'),
      'its drain timed out',
    )
    write(4 * MiB)

    const result = await finish()
    t.equal(result.received, 8 * MiB, 'every byte arrived')
    t.equal(result.got, result.sent, 'sha256 equal on both sides')
    await exitCodes(t, sender, receiver)
    t.ok(((await getSession(other, next.id)).body.bytes_in as number) > 0, 'the rest went through the new session')
  },
)

t.test('without --recreate-command a 1001 ends the transfer: exit 1', async (t) => {
  const draining = await start(t, ['--no-auth', '--addr', '127.0.0.1:0', '--drain-timeout', '1s'])
  const first = (await (await create(draining.port)).json()) as Created
  const { sender, receiver, state, write } = transfer(t, `ws://127.0.0.1:${draining.port}/relay/${first.id}`, first)
  write(1 * MiB)
  await until(() => state.received > 0, 60_000, 'the first bytes through')
  draining.child.kill('SIGTERM')
  t.equal(await receiver.exited, 1, 'the receiver exits 1')
  t.match(receiver.stderr(), /1001/, 'saying the relay shut down')
  t.equal(await sender.exited, 1, 'so does the sender')
})
