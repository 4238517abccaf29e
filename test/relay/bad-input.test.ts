// A flood of bad input against one relay while a session is live on it: every request gets
// its documented status and a JSON error, the process keeps serving, and the live session
// never notices.
import { request } from 'node:http'
import t from 'tap'
import { attach, createSession, pair, refusalOf, startTestRelay } from '../helpers/relay.js'

t.test('bad input gets its documented answer and disturbs no other session', async (t) => {
  const relay = await startTestRelay(t)
  const live = await pair(relay)
  const victim = await createSession(relay)
  const url = `${relay.ws}/relay/${victim.id}`
  // --max-headers-size is 32 KiB by default: a request head up to it reaches the relay, a
  // larger one gets uWebSockets.js's own 431 page (docs/relay.md).
  const longQuery = 'q=' + 'x'.repeat(30_000)
  const hugeQuery = 'q=' + 'x'.repeat(100_000)

  const expectations: Array<
    [string, () => Promise<{ status: number; body: unknown; allow: string | undefined }>, number]
  > = [
    ['malformed JSON body', () => call('POST', '/admin/sessions', '{"a":'), 400],
    ['a JSON array body', () => call('POST', '/admin/sessions', '[1,2]'), 400],
    ['an oversized body', () => call('POST', '/admin/sessions', 'x'.repeat(200_000)), 413],
    ['an unknown id on GET', () => call('GET', '/admin/sessions/unknown'), 404],
    ['an unknown id on DELETE', () => call('DELETE', '/admin/sessions/unknown'), 404],
    ['a very long unknown id', () => call('GET', `/admin/sessions/${'i'.repeat(30_000)}`), 404],
    ['a very long query on list', () => call('GET', `/admin/sessions?${longQuery}`), 200],
    ['a very long query on healthz', () => call('GET', `/healthz?${longQuery}`), 200],
    ['an unknown path', () => call('GET', `/${'p'.repeat(20_000)}`), 404],
    ['a request head over --max-headers-size', () => call('GET', `/healthz?${hugeQuery}`), 431],
    ['a method the route does not take', () => call('PATCH', '/admin/sessions'), 405],
    ['a non-standard method on a known path', () => call('PROPFIND', '/admin/sessions'), 405],
    ['a made-up method on a known path', () => call('FOO', '/healthz'), 405],
    ['a non-standard method elsewhere', () => call('PROPFIND', '/nowhere'), 404],
    ['a plain GET on the relay path', () => call('GET', `/relay/${victim.id}`), 426],
    [
      'an upgrade without a key',
      () => call('GET', `/relay/${victim.id}`, undefined, { connection: 'Upgrade', upgrade: 'websocket' }),
      400,
    ],
  ]
  for (const [what, send, status] of expectations) {
    const answer = await send()
    t.equal(answer.status, status, what)
    // uWS answers 431 before any handler runs: its own HTML page, not the relay's JSON.
    if (status === 431) t.match(answer.body, /Request Header Fields Too Large/, `${what}: uWS's page`)
    else if (status >= 400) t.match(answer.body, { error: String }, `${what}: JSON error`)
    if (status === 405) t.ok(answer.allow, `${what}: Allow names the methods the path takes`)
  }

  const attaches: Array<[string, Parameters<typeof attach>[1], string, number]> = [
    ['a token of the wrong length', { token: 'abc' }, url, 401],
    ['a token with a foreign alphabet', { token: '!'.repeat(22) }, url, 401],
    ['a 10 KiB token', { token: 'A'.repeat(10_000) }, url, 401],
    ['a garbage Authorization header', { headers: { authorization: 'Negotiate YIIB' } }, url, 401],
    ['a long junk query with no token', {}, `${url}?${longQuery}`, 401],
    ['an upgrade whose head is over --max-headers-size', {}, `${url}?${hugeQuery}`, 431],
    ['an unknown session', { token: victim.initiator_token }, `${relay.ws}/relay/unknown`, 404],
    [
      "the live session's slot, already taken",
      { token: live.session.initiator_token },
      `${relay.ws}/relay/${live.session.id}`,
      409,
    ],
  ]
  for (const [what, opts, target, status] of attaches) {
    const refusal = await refusalOf(attach(target, opts))
    t.equal(refusal.status, status, what)
    if (status === 431) t.match(refusal.body, /Request Header Fields Too Large/, `${what}: uWS's page`)
    else t.match(refusal.body, { error: String }, `${what}: JSON error`)
  }
  const racing = await Promise.allSettled(
    Array.from({ length: 10 }, () => attach(url, { token: victim.responder_token })),
  )
  t.equal(racing.filter((r) => r.status === 'fulfilled').length, 1, 'ten racing attaches: one wins')

  live.initiator.socket.send('still flowing')
  t.equal((await live.responder.receive(1))[0]!.data.toString(), 'still flowing', 'the live session is undisturbed')
  live.responder.socket.send('both ways')
  t.equal((await live.initiator.receive(1))[0]!.data.toString(), 'both ways')
  t.equal((await fetch(`${relay.http}/healthz`)).status, 200, 'the process keeps serving')

  function call(
    method: string,
    path: string,
    body?: string,
    headers: Record<string, string> = {},
  ): Promise<{ status: number; body: unknown; allow: string | undefined }> {
    return new Promise((resolve, reject) => {
      const req = request(`${relay.http}${path}`, { method, headers }, (res) => {
        let text = ''
        res.on('data', (chunk) => {
          text += chunk
        })
        res.on('end', () => {
          let parsed: unknown = text
          try {
            parsed = JSON.parse(text)
          } catch {}
          resolve({ status: res.statusCode ?? 0, body: parsed, allow: res.headers.allow })
        })
      })
      req.on('error', reject)
      req.end(body)
    })
  }
})
