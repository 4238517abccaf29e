// Limits per session, set by the optional JSON body of POST /admin/sessions within the node's
// defaults and maxima: total bytes (4004 past them), a TTL shorter than the node's.
import fc from 'fast-check'
import t from 'tap'
import { limitsOf } from '@session-relay/relay/admin/session-limits'
import { HttpError } from '@session-relay/relay/errors'
import { attach, startTestRelay } from '../helpers/relay.js'
import type { Created, TestRelay } from '../helpers/relay.js'

async function create(relay: TestRelay, body?: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${relay.http}/admin/sessions`, {
    method: 'POST',
    ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }),
  })
  return { status: response.status, body: (await response.json()) as Record<string, unknown> }
}

async function view(relay: TestRelay, id: string): Promise<Record<string, unknown>> {
  return (await (await fetch(`${relay.http}/admin/sessions/${id}`)).json()) as Record<string, unknown>
}

async function closedBy(relay: TestRelay, reason: string): Promise<number> {
  const text = await (await fetch(`${relay.http}/metrics`)).text()
  return Number(new RegExp(`^relay_sessions_closed_total\\{reason="${reason}"\\} (\\d+)$`, 'm').exec(text)?.[1])
}

t.test(
  'max_bytes: the bytes up to the limit all arrive, the message past it closes the session with 4004',
  async (t) => {
    const relay = await startTestRelay(t, ['--no-auth', '--log-level', 'warn'])
    const created = await create(relay, { max_bytes: 1000 })
    t.equal(created.status, 201)
    const session = created.body as unknown as Created
    const url = `${relay.ws}/relay/${session.id}`
    const initiator = await attach(url, { token: session.initiator_token })
    const responder = await attach(url, { token: session.responder_token })
    t.match(
      await view(relay, session.id),
      { limits: { max_bytes: 1000, ttl_seconds: 3600 } },
      'the session view shows its limits',
    )

    // Both directions count: 600 one way and 400 the other reach the limit exactly.
    initiator.socket.send(Buffer.alloc(600, 1))
    responder.socket.send(Buffer.alloc(400, 2))
    t.equal((await responder.receive(1))[0]!.data.length, 600, '600 bytes one way')
    t.equal((await initiator.receive(1))[0]!.data.length, 400, '400 the other: 1000 in all')
    t.equal((await view(relay, session.id)).state, 'open', 'at the limit, not past it: still open')

    initiator.socket.send(Buffer.alloc(1))
    const closes = await Promise.all([initiator.closed, responder.closed])
    t.same(
      closes,
      [
        { code: 4004, reason: 'session byte limit reached' },
        { code: 4004, reason: 'session byte limit reached' },
      ],
      'one byte past it: both peers get 4004',
    )
    t.equal(responder.received.length, 1, 'the message past the limit is not forwarded')
    t.equal(await closedBy(relay, 'byte_limit'), 1, 'relay_sessions_closed_total{reason="byte_limit"}')
  },
)

t.test("ttl_seconds: a session shorter than the node's TTL expires on its own time with 4001", async (t) => {
  const relay = await startTestRelay(t, ['--no-auth', '--log-level', 'warn'])
  const created = await create(relay, { ttl_seconds: 1 })
  t.equal(created.status, 201)
  const session = created.body as unknown as Created
  t.equal(
    Date.parse(session.expires_at) - Date.parse(session.created_at),
    1000,
    'expires_at one second after created_at',
  )
  const url = `${relay.ws}/relay/${session.id}`
  const initiator = await attach(url, { token: session.initiator_token })
  const responder = await attach(url, { token: session.responder_token })
  t.same(
    (await Promise.all([initiator.closed, responder.closed])).map((close) => close.code),
    [4001, 4001],
    'both peers get 4001',
  )
  t.equal((await fetch(`${relay.http}/admin/sessions/${session.id}`)).status, 404, 'gone, as an expired session is')
  t.equal((await create(relay, { ttl_seconds: 3601 })).status, 400, "longer than the node's TTL: 400")
  t.equal(await closedBy(relay, 'expired'), 1, 'counted as expired')
})

t.test("defaults and maxima: the node's settings fill in and bound what a body asks", async (t) => {
  const relay = await startTestRelay(t, [
    '--no-auth',
    '--log-level',
    'warn',
    '--default-session-bytes',
    '1KiB',
    '--max-session-bytes',
    '1MiB',
  ])
  const plain = await create(relay)
  t.match(await view(relay, plain.body.id as string), { limits: { max_bytes: 1024 } }, 'no body: the default')
  const asked = await create(relay, { max_bytes: 4096, other: 'ignored' })
  t.match(
    await view(relay, asked.body.id as string),
    { limits: { max_bytes: 4096 } },
    'within the maximum: as asked; other fields ignored',
  )
  const above = await create(relay, { max_bytes: 1024 * 1024 + 1 })
  t.equal(above.status, 400, 'above the maximum: 400')
  t.match(above.body, { error: /above this relay's maximum, 1048576/ })

  const onlyMax = await startTestRelay(t, ['--no-auth', '--log-level', 'warn', '--max-session-bytes', '2KiB'])
  t.match(
    await view(onlyMax, (await create(onlyMax)).body.id as string),
    { limits: { max_bytes: 2048 } },
    'a maximum alone is also the default',
  )
  const unlimited = await startTestRelay(t, ['--no-auth', '--log-level', 'warn'])
  t.match(
    await view(unlimited, (await create(unlimited)).body.id as string),
    { limits: { max_bytes: null } },
    'neither: no byte limit',
  )
})

t.test('any body: limits within the policy, or a 400', async (t) => {
  const policy = { defaultMaxBytes: 1000, maxMaxBytes: 10_000, defaultRate: 500, maxRate: 5000, ttlMs: 60_000 }
  const field = fc.oneof(
    fc.integer({ min: -5, max: 20_000 }),
    fc.double(),
    fc.string(),
    fc.constant(null),
    fc.boolean(),
    fc.constant(undefined),
  )
  const body = fc.oneof(
    fc
      .record({ max_bytes: field, bytes_per_second: field, ttl_seconds: field }, { requiredKeys: [] })
      .map((value) => JSON.stringify(value)),
    fc.json(),
    fc.string(),
  )
  fc.assert(
    fc.property(body, (text) => {
      let limits
      try {
        limits = limitsOf(Buffer.from(text), policy)
      } catch (error) {
        return error instanceof HttpError && error.status === 400
      }
      return (
        limits.maxBytes !== null &&
        limits.maxBytes > 0 &&
        limits.maxBytes <= policy.maxMaxBytes &&
        limits.bytesPerSecond !== null &&
        limits.bytesPerSecond > 0 &&
        limits.bytesPerSecond <= policy.maxRate &&
        limits.ttlMs > 0 &&
        limits.ttlMs <= policy.ttlMs
      )
    }),
    { numRuns: 2000 },
  )
  t.pass('2000 bodies')
})
