// The per-session rate limit (bytes_per_second) as the relay's flow control: a sender that
// waits for acknowledgements (`relay attach`) is slowed to the rate with bounded memory, one
// that ignores them is held up to --max-backlog and then closed with 4003, as for a slow
// receiver. The bucket's arithmetic is proved in token-bucket.test.ts; this is the real clock.
import { createHash, randomBytes } from 'node:crypto'
import t from 'tap'
import type { Test } from 'tap'
import { runCli } from '../helpers/client-cli.js'
import { attach, getSession, startTestRelay, until } from '../helpers/relay.js'
import type { Created, TestRelay } from '../helpers/relay.js'

const MiB = 1024 * 1024
/** What holding a message costs beyond its payload (relay/src/data-plane/message-costs.ts). */
const HELD_MESSAGE_OVERHEAD = 460

t.setTimeout(120_000)

async function create(t: Test, relay: TestRelay, body: unknown): Promise<Created> {
  const response = await fetch(`${relay.http}/admin/sessions`, { method: 'POST', body: JSON.stringify(body) })
  t.equal(response.status, 201)
  return (await response.json()) as Created
}

async function metric(relay: TestRelay, line: string): Promise<number> {
  const text = await (await fetch(`${relay.http}/metrics`)).text()
  const found = text.split('\n').find((l) => l.startsWith(`${line} `))
  return Number(found?.slice(line.length + 1))
}

t.test(
  "two relay attach processes move a transfer at the session's rate, byte for byte, the relay holding at most their window",
  async (t) => {
    const rate = 1 * MiB
    const total = 8 * MiB
    const relay = await startTestRelay(t, ['--no-auth', '--log-level', 'warn'])
    const session = await create(t, relay, { bytes_per_second: rate })
    t.match(
      (await getSession(relay, session.id)).body,
      { limits: { bytes_per_second: rate } },
      'the session view shows the rate',
    )
    const url = `${relay.ws}/relay/${session.id}`
    const sender = runCli(t, ['attach', url, `--token=${session.initiator_token}`])
    const receiver = runCli(t, ['attach', url, `--token=${session.responder_token}`])
    receiver.child.stdin.end()

    // Arrival events at the receiver's stdout: bytes so far and when, and what the relay held then.
    const arrivals: Array<{ at: number; bytes: number }> = []
    let received = 0
    let mostHeld = 0
    const got = createHash('sha256')
    const receiving = (async () => {
      for await (const chunk of receiver.child.stdout) {
        got.update(chunk as Buffer)
        received += (chunk as Buffer).length
        arrivals.push({ at: performance.now(), bytes: received })
        mostHeld = Math.max(mostHeld, relay.backlogBytes())
      }
    })()
    const payload = randomBytes(total)
    sender.child.stdin.end(payload)
    await receiving
    t.equal(await sender.exited, 0, `sender exit 0 (${sender.stderr()})`)
    t.equal(await receiver.exited, 0, `receiver exit 0 (${receiver.stderr()})`)
    t.equal(received, total, 'every byte arrived')
    t.equal(got.digest('hex'), createHash('sha256').update(payload).digest('hex'), 'sha256 equal')

    // From past the first two seconds' worth (the burst, and the start of both processes) to the
    // last byte: six seconds at the rate, the startup a small part of none of it.
    const mark = arrivals.find((a) => a.bytes >= 2 * rate)!
    const last = arrivals[arrivals.length - 1]!
    const measured = (last.bytes - mark.bytes) / ((last.at - mark.at) / 1000)
    t.ok(
      Math.abs(measured - rate) <= rate * 0.1,
      `within 10% of ${rate} B/s: ${Math.round(measured)} B/s over ${Math.round(last.at - mark.at)} ms`,
    )
    // `relay attach` keeps 4 MiB unacknowledged; the relay holds that and what the chunks cost.
    t.ok(mostHeld <= 4.5 * MiB, `the relay held at most the window: ${mostHeld} bytes`)
    t.ok(
      (await metric(relay, 'relay_rate_held_total{direction="initiator_to_responder"}')) >= 1,
      'relay_rate_held_total counts the direction held',
    )
    t.equal(
      await metric(relay, 'relay_rate_held_total{direction="responder_to_initiator"}'),
      0,
      'the acknowledgements never waited',
    )
  },
)

t.test(
  'a sender that ignores flow control is held up to --max-backlog, and closed with 4003 past it, not before',
  async (t) => {
    // One byte a second: the first message leaves the bucket a thousand seconds in debt, so
    // every later one is held for the whole test.
    const held = 10
    const relay = await startTestRelay(t, [
      '--no-auth',
      '--log-level',
      'warn',
      '--max-backlog',
      String(held * (1000 + HELD_MESSAGE_OVERHEAD)),
    ])
    const session = await create(t, relay, { bytes_per_second: 1 })
    const url = `${relay.ws}/relay/${session.id}`
    const initiator = await attach(url, { token: session.initiator_token })
    const responder = await attach(url, { token: session.responder_token })
    initiator.socket.send(Buffer.alloc(1000, 1))
    await responder.receive(1)

    for (let i = 0; i < held; i++) initiator.socket.send(Buffer.alloc(1000, 2))
    await until(
      () => relay.backlogBytes() === held * (1000 + HELD_MESSAGE_OVERHEAD),
      10_000,
      'the relay to hold every message',
    )
    t.equal((await getSession(relay, session.id)).body.state, 'open', 'at the bound, not past it: still open')
    t.equal(
      await metric(relay, 'relay_sessions_rate_held{direction="initiator_to_responder"}'),
      1,
      'relay_sessions_rate_held shows the session paused',
    )
    t.equal(
      await metric(relay, 'relay_sessions_rate_held{direction="responder_to_initiator"}'),
      0,
      'in that direction only',
    )

    initiator.socket.send(Buffer.alloc(1, 3))
    const closes = await Promise.all([initiator.closed, responder.closed])
    t.same(
      closes.map((close) => close.code),
      [4003, 4003],
      'one byte past it: both peers get 4003',
    )
    t.equal(responder.received.length, 1, 'the held messages were never forwarded')
    t.equal(await metric(relay, 'relay_sessions_closed_total{reason="too_slow"}'), 1, 'counted as too_slow')
    t.equal(relay.backlogBytes(), 0, 'what was held is freed')
  },
)

t.test('what was held while the peer was away goes at the rate when it reattaches, not at once', async (t) => {
  const relay = await startTestRelay(t, ['--no-auth', '--log-level', 'warn'])
  const session = await create(t, relay, { bytes_per_second: 1 })
  const url = `${relay.ws}/relay/${session.id}`
  const initiator = await attach(url, { token: session.initiator_token })
  const away = await attach(url, { token: session.responder_token })
  away.socket.terminate()
  await until(
    async () => (await getSession(relay, session.id)).body.responder_connected === false,
    10_000,
    'the relay to see the drop',
  )

  for (let i = 0; i < 3; i++) initiator.socket.send(Buffer.alloc(100, i))
  await until(
    () => relay.backlogBytes() === 3 * (100 + HELD_MESSAGE_OVERHEAD),
    10_000,
    'the relay to hold the three messages',
  )
  const back = await attach(url, { token: session.responder_token })
  t.equal((await back.receive(1))[0]!.data[0], 0, "the first goes at once: the bucket held a second's worth")
  t.equal(
    relay.backlogBytes(),
    2 * (100 + HELD_MESSAGE_OVERHEAD),
    'the other two stay held: the first left the bucket in debt',
  )
  t.equal(
    await metric(relay, 'relay_sessions_rate_held{direction="initiator_to_responder"}'),
    1,
    'the session counts as rate-held',
  )
})

t.test("a rate above the node's maximum answers 400; the node's default applies to a body without one", async (t) => {
  const relay = await startTestRelay(t, [
    '--no-auth',
    '--log-level',
    'warn',
    '--default-session-rate',
    '1KiB',
    '--max-session-rate',
    '1MiB',
  ])
  const plain = await create(t, relay, {})
  t.match(
    (await getSession(relay, plain.id)).body,
    { limits: { bytes_per_second: 1024 } },
    'no rate asked: the default',
  )
  const above = await fetch(`${relay.http}/admin/sessions`, {
    method: 'POST',
    body: JSON.stringify({ bytes_per_second: MiB + 1 }),
  })
  t.equal(above.status, 400)
  t.match(await above.json(), { error: /bytes_per_second 1048577 is above this relay's maximum, 1048576/ })
})
