// --max-sessions-per-caller: sessions one admin caller holds at once, by a token claim (`sub`
// or --caller-claim), or by client address with auth disabled. Past it creation answers 429;
// another caller still gets 201, and a closed session frees its place.
import { request } from 'node:http'
import t from 'tap'
import { startOidcProvider } from '../fixtures/oidc-provider.js'
import { startTestRelay } from '../helpers/relay.js'
import type { TestRelay } from '../helpers/relay.js'

const AUDIENCE = 'https://relay.test'
const SCOPES = 'relay:session:create relay:session:read relay:session:delete'

type Answer = { status: number; retryAfter: string | undefined; body: Record<string, unknown> }

/** An admin request from `localAddress` (any 127.0.0.0/8 address reaches the relay on 127.0.0.1). */
function call(
  relay: TestRelay,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  localAddress = '127.0.0.1',
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: relay.port, method, path, headers, localAddress }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (chunk: Buffer) => chunks.push(chunk))
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString()
        const retry = res.headers['retry-after']
        resolve({
          status: res.statusCode ?? 0,
          retryAfter: Array.isArray(retry) ? retry[0] : retry,
          body: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>),
        })
      })
    })
    req.on('error', reject)
    req.end()
  })
}

async function refusedForCaller(relay: TestRelay): Promise<number> {
  const text = await (await fetch(`${relay.http}/metrics`)).text()
  return Number(/^relay_admin_refused_total\{reason="caller_sessions"\} (\d+)$/m.exec(text)?.[1])
}

t.test('a subject past its cap gets 429, another subject 201; a closed session frees a place', async (t) => {
  const oidc = await startOidcProvider()
  t.teardown(() => oidc.close())
  const relay = await startTestRelay(t, [
    '--oidc-issuer',
    oidc.issuer,
    '--oidc-audience',
    AUDIENCE,
    '--max-sessions-per-caller',
    '2',
  ])
  const now = Math.floor(Date.now() / 1000)
  const tokenOf = async (claims: Record<string, unknown>) => ({
    authorization: `Bearer ${await oidc.sign({ iss: oidc.issuer, aud: AUDIENCE, iat: now, exp: now + 600, scope: SCOPES, ...claims })}`,
  })
  const alice = await tokenOf({ sub: 'alice' })
  const bob = await tokenOf({ sub: 'bob' })

  const first = await call(relay, 'POST', '/admin/sessions', alice)
  t.equal(first.status, 201)
  t.equal((await call(relay, 'POST', '/admin/sessions', alice)).status, 201, "alice's second")
  const third = await call(relay, 'POST', '/admin/sessions', alice)
  t.equal(third.status, 429, "alice's third: past her cap")
  t.same(third.body, { error: 'too many sessions held by this caller' })
  t.ok(Number(third.retryAfter) > 0, 'with Retry-After')
  t.equal((await call(relay, 'POST', '/admin/sessions', bob)).status, 201, 'bob, from the same address, still gets 201')
  t.equal(await refusedForCaller(relay), 1, 'relay_admin_refused_total{reason="caller_sessions"} counts it')

  t.equal((await call(relay, 'DELETE', `/admin/sessions/${first.body.id as string}`, alice)).status, 204)
  t.equal((await call(relay, 'POST', '/admin/sessions', alice)).status, 201, 'a deleted session frees its place')
})

t.test('--caller-claim names the caller by another claim; a token without it counts as its address', async (t) => {
  const oidc = await startOidcProvider()
  t.teardown(() => oidc.close())
  const relay = await startTestRelay(t, [
    '--oidc-issuer',
    oidc.issuer,
    '--oidc-audience',
    AUDIENCE,
    '--max-sessions-per-caller',
    '1',
    '--caller-claim',
    'azp',
  ])
  const now = Math.floor(Date.now() / 1000)
  const tokenOf = async (claims: Record<string, unknown>) => ({
    authorization: `Bearer ${await oidc.sign({ iss: oidc.issuer, aud: AUDIENCE, iat: now, exp: now + 600, scope: SCOPES, sub: 'service', ...claims })}`,
  })
  t.equal((await call(relay, 'POST', '/admin/sessions', await tokenOf({ azp: 'app-a' }))).status, 201, 'app-a')
  t.equal(
    (await call(relay, 'POST', '/admin/sessions', await tokenOf({ azp: 'app-a' }))).status,
    429,
    'app-a again: past its cap',
  )
  t.equal(
    (await call(relay, 'POST', '/admin/sessions', await tokenOf({ azp: 'app-b' }))).status,
    201,
    'app-b, same sub: a caller of its own',
  )
  const noClaim = await tokenOf({})
  t.equal((await call(relay, 'POST', '/admin/sessions', noClaim)).status, 201, 'no azp: counted as 127.0.0.1')
  t.equal((await call(relay, 'POST', '/admin/sessions', noClaim)).status, 429, 'and 127.0.0.1 is past its cap')
})

t.test('auth disabled: the cap is per client address', async (t) => {
  const relay = await startTestRelay(t, ['--no-auth', '--max-sessions-per-caller', '2'])
  t.equal((await call(relay, 'POST', '/admin/sessions')).status, 201)
  t.equal((await call(relay, 'POST', '/admin/sessions')).status, 201)
  t.equal((await call(relay, 'POST', '/admin/sessions')).status, 429, '127.0.0.1 past its cap')
  t.equal((await call(relay, 'POST', '/admin/sessions', {}, '127.0.0.2')).status, 201, '127.0.0.2 still gets 201')
})

t.test('off: no cap of its own', async (t) => {
  const relay = await startTestRelay(t, ['--no-auth', '--max-sessions-per-caller', 'off'])
  for (let i = 0; i < 5; i++) t.equal((await call(relay, 'POST', '/admin/sessions')).status, 201)
})
