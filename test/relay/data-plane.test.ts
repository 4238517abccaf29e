import { randomBytes } from 'node:crypto'
import t from 'tap'
import {
  attach,
  createSession,
  drained,
  getSession,
  pair,
  refusalOf,
  startTestRelay,
  turn,
  until,
} from '../helpers/relay.js'

t.test('frames flow both ways, in order, byte-exact, with their text or binary type', async (t) => {
  const relay = await startTestRelay(t)
  const { session, initiator, responder } = await pair(relay)
  const sizes = [0, 1, 16, 1000, 4095, 4096, 70_000, 1_000_000]
  const sent = sizes.map((size, i) => ({ data: randomBytes(size), isBinary: i % 2 === 0 }))
  for (const m of sent) initiator.socket.send(m.isBinary ? m.data : m.data.toString('base64'), { binary: m.isBinary })
  const got = await responder.receive(sent.length)
  got.forEach((m, i) => {
    const expected = sent[i]!
    t.equal(m.isBinary, expected.isBinary, `message ${i} keeps its type`)
    t.ok(
      m.data.equals(expected.isBinary ? expected.data : Buffer.from(expected.data.toString('base64'))),
      `message ${i} is byte-exact`,
    )
  })
  responder.socket.send('pong', { binary: false })
  const [back] = await initiator.receive(1)
  t.equal(back!.data.toString(), 'pong')
  t.equal(back!.isBinary, false)

  const view = await getSession(relay, session.id)
  const payload = sent.reduce((n, m) => n + (m.isBinary ? m.data.length : m.data.toString('base64').length), 0) + 4
  t.equal(view.body.bytes_in, payload, 'bytes_in counts every payload byte received')
  t.equal(view.body.bytes_out, payload, 'bytes_out counts every payload byte delivered')
  t.equal(view.body.state, 'open')
  t.equal(view.body.initiator_connected, true)
  t.equal(view.body.responder_connected, true)
})

t.test('many small frames arrive once and in order (coalesced path)', async (t) => {
  const relay = await startTestRelay(t)
  const { initiator, responder } = await pair(relay)
  const count = 20_000
  for (let i = 0; i < count; i++) initiator.socket.send(String(i))
  const got = await responder.receive(count)
  t.equal(got.length, count)
  t.ok(
    got.every((m, i) => m.data.toString() === String(i) && !m.isBinary),
    'every frame once, in order, as text',
  )
})

t.test('the token goes in Authorization or in ?token=', async (t) => {
  const relay = await startTestRelay(t)
  const session = await createSession(relay)
  const url = `${relay.ws}/relay/${session.id}`
  const a = await attach(url, { token: session.initiator_token, query: true })
  const b = await attach(url, { token: session.responder_token })
  a.socket.send('via query')
  t.equal((await b.receive(1))[0]!.data.toString(), 'via query')
})

t.test('attach refusals: plain HTTP answers with a JSON error before any upgrade', async (t) => {
  const relay = await startTestRelay(t)
  const session = await createSession(relay)
  const other = await createSession(relay)
  const url = `${relay.ws}/relay/${session.id}`

  const unknown = await refusalOf(attach(`${relay.ws}/relay/nope`, { token: session.initiator_token }))
  t.equal(unknown.status, 404)
  t.same(unknown.body, { error: 'session not found' })
  t.match(unknown.headers['content-type'], /^application\/json/)

  for (const [what, token] of [
    ['missing token', undefined],
    ['a token of another session', other.initiator_token],
    ['a token of the wrong length', session.initiator_token.slice(1)],
    ['a token with characters outside base64url', session.initiator_token.slice(1) + '+'],
    ['a well-formed token nobody issued', 'A'.repeat(22)],
  ] as const) {
    const refusal = await refusalOf(attach(url, token === undefined ? {} : { token }))
    t.equal(refusal.status, 401, what)
    t.match(refusal.body, { error: /slot token/ }, what)
  }

  const first = await attach(url, { token: session.initiator_token })
  const second = await refusalOf(attach(url, { token: session.initiator_token }))
  t.equal(second.status, 409)
  t.same(second.body, { error: 'slot already connected' })
  t.equal(first.socket.readyState, first.socket.OPEN, 'the connected peer is undisturbed')

  const metrics = await (await fetch(`${relay.http}/metrics`)).text()
  t.match(metrics, /relay_attach_refused_total\{reason="not_found"\} 1/)
  t.match(metrics, /relay_attach_refused_total\{reason="unauthorized"\} 5/)
  t.match(metrics, /relay_attach_refused_total\{reason="conflict"\} 1/)
})

t.test('two attaches racing for one slot: exactly one wins', async (t) => {
  const relay = await startTestRelay(t)
  const session = await createSession(relay)
  const url = `${relay.ws}/relay/${session.id}`
  const results = await Promise.allSettled(
    Array.from({ length: 8 }, () => attach(url, { token: session.responder_token })),
  )
  const won = results.filter((r) => r.status === 'fulfilled')
  const lost = results.filter((r) => r.status === 'rejected')
  t.equal(won.length, 1)
  t.ok(
    lost.every((r) => (r.reason as { refusal?: { status: number } }).refusal?.status === 409),
    'the others get 409',
  )
})

t.test('non-upgrade and malformed upgrade requests on /relay/{id}', async (t) => {
  const relay = await startTestRelay(t)
  const session = await createSession(relay)
  const plain = await fetch(`${relay.http}/relay/${session.id}`)
  t.equal(plain.status, 426)
  t.same(await plain.json(), { error: 'websocket upgrade required' })
  const { request } = await import('node:http')
  const missingKey = await new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = request(`${relay.http}/relay/${session.id}`, {
      headers: { connection: 'Upgrade', upgrade: 'websocket', authorization: `Bearer ${session.initiator_token}` },
    })
    req.on('response', (res) => {
      let body = ''
      res.on('data', (c) => {
        body += c
      })
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }))
    })
    req.on('upgrade', () => reject(new Error('upgraded without a key')))
    req.on('error', reject)
    req.end()
  })
  t.equal(missingKey.status, 400)
  t.same(JSON.parse(missingKey.body), { error: 'invalid websocket upgrade request' })
})

t.test('messages sent before the counterpart attaches are delivered in order when it does', async (t) => {
  const relay = await startTestRelay(t)
  const session = await createSession(relay)
  const url = `${relay.ws}/relay/${session.id}`
  const initiator = await attach(url, { token: session.initiator_token })
  t.equal((await getSession(relay, session.id)).body.state, 'half_open')
  initiator.socket.send('one')
  initiator.socket.send(Buffer.from([1, 2, 3]))
  initiator.socket.send('x'.repeat(10_000))
  await until(async () => (await getSession(relay, session.id)).body.bytes_in === 10_006, 2000, 'bytes_in')
  t.equal((await getSession(relay, session.id)).body.bytes_out, 0, 'nothing delivered yet')
  const responder = await attach(url, { token: session.responder_token })
  const got = await responder.receive(3)
  t.same(
    got.map((m) => [m.data.toString('hex'), m.isBinary]),
    [
      [Buffer.from('one').toString('hex'), false],
      ['010203', true],
      [Buffer.from('x'.repeat(10_000)).toString('hex'), false],
    ],
  )
  t.equal((await getSession(relay, session.id)).body.bytes_out, 10_006)
})

t.test('a dropped peer reattaches within peer-wait and gets what was sent meanwhile', async (t) => {
  const relay = await startTestRelay(t, ['--no-auth', '--peer-wait', '2s'])
  const { session, initiator, responder } = await pair(relay)
  responder.socket.terminate() // no close frame: a drop, not a close
  await until(async () => (await getSession(relay, session.id)).body.state === 'half_open', 2000, 'half_open')
  for (let i = 0; i < 5; i++) initiator.socket.send(`while away ${i}`)
  await until(async () => (await getSession(relay, session.id)).body.bytes_in === 5 * 12, 2000, 'bytes_in')
  const back = await attach(`${relay.ws}/relay/${session.id}`, { token: session.responder_token })
  const got = await back.receive(5)
  t.same(
    got.map((m) => m.data.toString()),
    [0, 1, 2, 3, 4].map((i) => `while away ${i}`),
  )
  t.equal((await getSession(relay, session.id)).body.state, 'open')
  t.equal(initiator.socket.readyState, initiator.socket.OPEN, 'the other peer never noticed')
})

t.test('peer-wait: a slot left empty closes the session with 4002', async (t) => {
  const relay = await startTestRelay(t, ['--no-auth', '--peer-wait', '300ms'])
  // Created first, so the two peer-waits below (300 ms each) outlast one peer-wait of its own.
  const untouched = await createSession(relay)
  const lonely = await createSession(relay)
  const initiator = await attach(`${relay.ws}/relay/${lonely.id}`, { token: lonely.initiator_token })
  const closed = await initiator.closed
  t.same(closed, { code: 4002, reason: 'peer did not arrive' })
  t.equal((await getSession(relay, lonely.id)).body.state, 'closed', 'visible as closed until the sweep')
  const late = await refusalOf(attach(`${relay.ws}/relay/${lonely.id}`, { token: lonely.responder_token }))
  t.equal(late.status, 401, 'tokens of a closed session are dead')

  const dropped = await pair(relay)
  dropped.responder.socket.terminate()
  t.same(await dropped.initiator.closed, { code: 4002, reason: 'peer did not arrive' })

  t.equal(
    (await getSession(relay, untouched.id)).body.state,
    'pending',
    'a session nobody attached to has no peer-wait',
  )
})

t.test('a deliberate close is forwarded with its code and reason and closes the session', async (t) => {
  const relay = await startTestRelay(t)
  const { session, initiator, responder } = await pair(relay)
  initiator.socket.close(4321, 'done here')
  t.same(await responder.closed, { code: 4321, reason: 'done here' })
  t.equal((await getSession(relay, session.id)).body.state, 'closed')
  const again = await refusalOf(attach(`${relay.ws}/relay/${session.id}`, { token: session.initiator_token }))
  t.equal(again.status, 401)

  const plain = await pair(relay)
  plain.responder.socket.close()
  t.equal((await plain.initiator.closed).code, 1005, 'a close without a code arrives without a code')
})

t.test('DELETE closes connected peers with 4000 and the session is gone', async (t) => {
  const relay = await startTestRelay(t)
  const { session, initiator, responder } = await pair(relay)
  const response = await fetch(`${relay.http}/admin/sessions/${session.id}`, { method: 'DELETE' })
  t.equal(response.status, 204)
  t.same(await initiator.closed, { code: 4000, reason: 'session deleted' })
  t.same(await responder.closed, { code: 4000, reason: 'session deleted' })
  t.equal((await getSession(relay, session.id)).status, 404)
  const again = await refusalOf(attach(`${relay.ws}/relay/${session.id}`, { token: session.initiator_token }))
  t.equal(again.status, 404)
})

t.test('expiry closes peers with 4001 and the session answers 404 at once', async (t) => {
  const relay = await startTestRelay(t, ['--no-auth', '--session-ttl', '400ms', '--reap-interval', '1h'])
  const { session, initiator, responder } = await pair(relay)
  t.same(await initiator.closed, { code: 4001, reason: 'session expired' })
  t.same(await responder.closed, { code: 4001, reason: 'session expired' })
  t.equal((await getSession(relay, session.id)).status, 404, 'gone without waiting for the sweep')
  const list = (await (await fetch(`${relay.http}/admin/sessions`)).json()) as { sessions: unknown[] }
  t.same(list.sessions, [])
})

t.test('the sweep removes closed sessions', async (t) => {
  const relay = await startTestRelay(t, ['--no-auth', '--reap-interval', '200ms'])
  const { session, initiator } = await pair(relay)
  initiator.socket.close(1000)
  await until(async () => (await getSession(relay, session.id)).body.state === 'closed', 2000, 'closed')
  await until(async () => (await getSession(relay, session.id)).status === 404, 2000, 'swept')
  t.pass('closed session swept')
})

t.test('a receiver that stops reading: the session closes with 4003, other sessions keep flowing', async (t) => {
  const relay = await startTestRelay(t, ['--no-auth', '--max-backlog', '1MiB'])
  const { session, initiator, responder } = await pair(relay)
  const healthy = await pair(relay)
  // Stop reading at the TCP level: the relay's writes to the responder back up.
  ;(responder.socket as unknown as { _socket: { pause(): void } })._socket.pause()
  const chunk = randomBytes(64 * 1024)
  let sending = true
  const pump = async (): Promise<void> => {
    while (sending && initiator.socket.readyState === initiator.socket.OPEN) {
      if (initiator.socket.bufferedAmount < 1024 * 1024) initiator.socket.send(chunk)
      else await drained(initiator)
      await turn()
    }
  }
  void pump()
  healthy.initiator.socket.send('still here')
  t.equal((await healthy.responder.receive(1))[0]!.data.toString(), 'still here')
  const closed = await initiator.closed
  sending = false
  t.same(closed, { code: 4003, reason: 'receiver too slow' })
  t.equal((await getSession(relay, session.id)).body.state, 'closed')
  healthy.initiator.socket.send('after')
  t.equal((await healthy.responder.receive(2))[1]!.data.toString(), 'after', 'the other session is undisturbed')
  const metrics = await (await fetch(`${relay.http}/metrics`)).text()
  t.match(metrics, /relay_sessions_closed_total\{reason="too_slow"\} 1/)
})

t.test('held messages are bounded by the same limit while the counterpart is away', async (t) => {
  const relay = await startTestRelay(t, ['--no-auth', '--max-backlog', '64KiB'])
  const session = await createSession(relay)
  const initiator = await attach(`${relay.ws}/relay/${session.id}`, { token: session.initiator_token })
  for (let i = 0; i < 20; i++) initiator.socket.send(randomBytes(8 * 1024))
  t.same(await initiator.closed, { code: 4003, reason: 'receiver too slow' })
})

t.test('past the total backlog limit the session furthest behind closes, not the one that sent last', async (t) => {
  const relay = await startTestRelay(t, ['--no-auth', '--max-backlog', '64KiB', '--max-total-backlog', '96KiB'])
  const a = await createSession(relay)
  const b = await createSession(relay)
  const peerA = await attach(`${relay.ws}/relay/${a.id}`, { token: a.initiator_token })
  const peerB = await attach(`${relay.ws}/relay/${b.id}`, { token: b.initiator_token })
  peerA.socket.send(randomBytes(60 * 1024))
  await until(async () => (await getSession(relay, a.id)).body.bytes_in === 60 * 1024, 2000, 'a held')
  t.equal((await getSession(relay, a.id)).body.state, 'half_open', 'within both limits')
  peerB.socket.send(randomBytes(20 * 1024))
  await until(async () => (await getSession(relay, b.id)).body.bytes_in === 20 * 1024, 2000, 'b held')
  t.equal((await getSession(relay, b.id)).body.state, 'half_open', '80 KiB in all: still within the total')
  peerB.socket.send(randomBytes(20 * 1024))
  t.same(await peerA.closed, { code: 4003, reason: 'receiver too slow' }, 'the largest backlog (60 KiB) closes')
  await until(async () => (await getSession(relay, b.id)).body.bytes_in === 40 * 1024, 2000, 'b received it all')
  t.equal(
    (await getSession(relay, b.id)).body.state,
    'half_open',
    'the session that crossed the total keeps its 40 KiB',
  )
  t.equal(peerB.socket.readyState, peerB.socket.OPEN)
  const responderB = await attach(`${relay.ws}/relay/${b.id}`, { token: b.responder_token })
  const held = await responderB.receive(2)
  t.same(
    held.map((m) => m.data.length),
    [20 * 1024, 20 * 1024],
    'and delivers it when its receiver comes',
  )
})

t.test('a message above --max-frame-size closes that connection only', async (t) => {
  const relay = await startTestRelay(t, ['--no-auth', '--max-frame-size', '1024', '--peer-wait', '5s'])
  const { session, initiator, responder } = await pair(relay)
  initiator.socket.send(Buffer.alloc(1024))
  t.equal((await responder.receive(1))[0]!.data.length, 1024, 'exactly the limit passes')
  initiator.socket.send(Buffer.alloc(1025))
  const closed = await initiator.closed
  t.equal(closed.code, 1006, 'uWS 20.30 ends the connection without a close frame')
  await until(async () => (await getSession(relay, session.id)).body.state === 'half_open', 2000, 'half_open')
  t.equal(responder.socket.readyState, responder.socket.OPEN, 'the counterpart stays, waiting for a reattach')
  t.match(await (await fetch(`${relay.http}/metrics`)).text(), /relay_frames_too_big_total 1/)
})

t.test('session states follow the slots', async (t) => {
  const relay = await startTestRelay(t, ['--no-auth', '--peer-wait', '5s'])
  const session = await createSession(relay)
  const state = async (): Promise<unknown> => (await getSession(relay, session.id)).body.state
  t.equal(await state(), 'pending')
  const url = `${relay.ws}/relay/${session.id}`
  const responder = await attach(url, { token: session.responder_token })
  t.equal(await state(), 'half_open')
  const initiator = await attach(url, { token: session.initiator_token })
  t.equal(await state(), 'open')
  initiator.socket.terminate()
  await until(async () => (await state()) === 'half_open', 2000, 'half_open')
  responder.socket.terminate()
  await until(async () => (await state()) === 'pending', 2000, 'pending after both dropped')
  const view = (await getSession(relay, session.id)).body
  t.equal(view.initiator_connected, false)
  t.equal(view.responder_connected, false)
  t.ok(Date.parse(view.last_activity as string) >= Date.parse(view.created_at as string))
})
