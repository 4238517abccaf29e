// What an attacker probing slot tokens can learn. Every wrong token for an existing session is
// answered byte for byte alike, whether it belongs to another session, to a dead one or to
// none; and the check itself compares SHA-256 digests with crypto.timingSafeEqual, both slots
// every time. No timed assertions: timing is shown by what the code calls, not by a stopwatch.
import * as crypto from 'node:crypto'
import type { IncomingHttpHeaders } from 'node:http'
import { request } from 'node:http'
import t from 'tap'
import { attach, createSession, getSession, startTestRelay, until } from '../helpers/relay.js'
import type { TestRelay } from '../helpers/relay.js'
import type * as TokensModule from '@session-relay/relay/session/tokens'

type Answer = { status: number; headers: IncomingHttpHeaders; body: string }

t.test('a wrong token for an existing session is answered alike, whoever it belongs to', async (t) => {
  const relay = await startTestRelay(t, ['--no-auth', '--attach-failure-limit', 'off'])
  const target = await createSession(relay)
  const other = await createSession(relay)
  const dead = await createSession(relay)
  t.equal((await fetch(`${relay.http}/admin/sessions/${dead.id}`, { method: 'DELETE' })).status, 204)
  const closed = await createSession(relay)
  const path = `/relay/${target.id}`

  const wrong: Array<[string, string]> = [
    ['a token of another live session', other.initiator_token],
    ['the other slot token of another live session', other.responder_token],
    ['a token of a deleted session', dead.responder_token],
    ['a well-formed token that belongs to no session', crypto.randomBytes(16).toString('base64url')],
    ['a token that is not even well-formed', 'not-a-token'],
  ]
  const reference = await upgrade(relay, path, { authorization: `Bearer ${other.initiator_token}` })
  t.equal(reference.status, 401)
  t.same(JSON.parse(reference.body), { error: 'invalid slot token' })
  for (const [what, token] of wrong) {
    t.same(
      comparable(await upgrade(relay, path, { authorization: `Bearer ${token}` })),
      comparable(reference),
      `${what}, in Authorization`,
    )
    t.same(
      comparable(await upgrade(relay, `${path}?token=${encodeURIComponent(token)}`)),
      comparable(reference),
      `${what}, in ?token=`,
    )
  }

  // A session closed by its peer keeps its entry until the sweep; its own tokens are dead.
  const peer = await attach(`${relay.ws}/relay/${closed.id}`, { token: closed.initiator_token })
  peer.socket.close(1000)
  await until(async () => (await getSession(relay, closed.id)).body.state === 'closed', 2000, 'closed')
  const ownDeadToken = await upgrade(relay, `/relay/${closed.id}`, {
    authorization: `Bearer ${closed.responder_token}`,
  })
  t.same(comparable(ownDeadToken), comparable(reference), "the session's own token once it is closed")

  // An unknown id answers 404, and the token, whatever it is, changes nothing about that.
  const unknown = `/relay/${crypto.randomBytes(16).toString('base64url')}`
  const notFound = await upgrade(relay, unknown, { authorization: `Bearer ${target.initiator_token}` })
  t.equal(notFound.status, 404)
  for (const [what, token] of [...wrong, ['no token at all', '']] as Array<[string, string]>) {
    const headers: Record<string, string> = token === '' ? {} : { authorization: `Bearer ${token}` }
    t.same(comparable(await upgrade(relay, unknown, headers)), comparable(notFound), `unknown session, ${what}`)
  }
})

t.test('slot tokens are checked by comparing digests with timingSafeEqual, both slots every time', async (t) => {
  const calls: Array<[number, number]> = []
  const tokens = await t.mockImport<typeof TokensModule>('../../relay/dist/session/tokens.js', {
    'node:crypto': {
      ...crypto,
      timingSafeEqual: (a: NodeJS.ArrayBufferView, b: NodeJS.ArrayBufferView): boolean => {
        calls.push([a.byteLength, b.byteLength])
        return crypto.timingSafeEqual(a, b)
      },
    },
  })
  const credentials = tokens.newCredentials()
  const cases: Array<[string, string, 0 | 1 | -1]> = [
    ['the initiator token', credentials.initiatorToken, 0],
    ['the responder token', credentials.responderToken, 1],
    ['a token of another session', tokens.newCredentials().initiatorToken, -1],
    ['a random string', 'x', -1],
  ]
  for (const [what, token, slot] of cases) {
    calls.length = 0
    t.equal(tokens.slotOfToken(credentials.digests, token), slot, what)
    t.same(
      calls,
      [
        [32, 32],
        [32, 32],
      ],
      `${what}: two constant-time compares of 32-byte SHA-256 digests`,
    )
  }
  t.notOk(credentials.digests.includes(Buffer.from(credentials.initiatorToken)), 'the token itself is not kept')
})

/** The parts of an answer a client sees, less the clock. */
function comparable(answer: Answer): unknown {
  const { date: _date, ...headers } = answer.headers
  return { status: answer.status, headers, body: answer.body }
}

function upgrade(relay: TestRelay, path: string, headers: Record<string, string> = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(`${relay.http}${path}`, {
      headers: {
        connection: 'Upgrade',
        upgrade: 'websocket',
        'sec-websocket-version': '13',
        'sec-websocket-key': Buffer.from('0123456789abcdef').toString('base64'),
        ...headers,
      },
    })
    req.on('upgrade', (res, socket) => {
      socket.destroy()
      reject(new Error(`upgrade accepted for ${path}: ${res.statusCode}`))
    })
    req.on('response', (res) => {
      let body = ''
      res.on('data', (chunk) => {
        body += chunk
      })
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }))
    })
    req.on('error', reject)
    req.end()
  })
}
