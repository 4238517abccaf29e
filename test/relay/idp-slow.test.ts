// A slow identity provider: one that accepts connections and never answers, or sends headers
// and then stalls in the body. Every fetch has a timeout, so admin requests answer 503 instead
// of hanging, the data plane is untouched, and the relay recovers without a restart once the
// provider answers again. (Down at start, down mid-run and key rotation: auth.test.ts.)
import { randomUUID } from 'node:crypto'
import { createServer } from 'node:http'
import type { ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import type { Test } from 'tap'
import { SignJWT, exportJWK, generateKeyPair } from 'jose'
import { startTestRelay, until } from '../helpers/relay.js'
import type { TestRelay } from '../helpers/relay.js'
import { withTimeout } from '../helpers/wait.js'

const AUDIENCE = 'https://relay.test'
const UNAVAILABLE = { error: 'identity provider unavailable' }
const FAST = { fetchTimeoutMs: 300, retryMs: 100, refreshCooldownMs: 100 }

type Mode = 'answer' | 'hang' | 'stall-body'

t.test('a provider that accepts and never answers: 503 within the fetch timeout, then recovery', async (t) => {
  const idp = await slowIssuer(t, 'hang')
  const relay = await startTestRelay(t, ['--oidc-issuer', idp.issuer, '--oidc-audience', AUDIENCE], { auth: FAST })
  const token = await idp.sign()
  await expectUnavailable(t, relay, token)
  t.ok(idp.requests() > 0, 'the relay did ask')

  await otherRoutesAnswer(t, relay)
  idp.setMode('answer')
  await until(async () => (await admin(relay, token)).status === 201, 5_000, 'admin to recover without a restart')
  t.equal((await fetch(`${relay.http}/.well-known/relay-config`)).status, 200, 'discovery recovers')
})

t.test('a provider that stalls in the middle of its body: the timeout covers the body too', async (t) => {
  const idp = await slowIssuer(t, 'stall-body')
  const relay = await startTestRelay(t, ['--oidc-issuer', idp.issuer, '--oidc-audience', AUDIENCE], { auth: FAST })
  await expectUnavailable(t, relay, await idp.sign())
  idp.setMode('answer')
  await until(async () => (await admin(relay, await idp.sign())).status === 201, 5_000, 'admin to recover')
})

t.test('a provider that turns slow mid-run: known keys keep working, an unknown kid answers 503 in time', async (t) => {
  const idp = await slowIssuer(t, 'answer')
  let clock = Date.now()
  const relay = await startTestRelay(t, ['--oidc-issuer', idp.issuer, '--oidc-audience', AUDIENCE], {
    auth: { ...FAST, now: () => clock },
  })
  const known = await idp.sign()
  t.equal((await admin(relay, known)).status, 201)
  idp.setMode('hang')
  await idp.rotate()
  const unknown = await idp.sign()
  t.equal((await admin(relay, known)).status, 201, 'a cached key needs no fetch')
  clock += 150 // past the refresh cooldown
  const refused = await withTimeout(admin(relay, unknown), 5_000, 'an answer while the provider hangs')
  t.equal(refused.status, 503)
  t.same(refused.body, UNAVAILABLE)
  idp.setMode('answer')
  clock += 150 // past the cooldown of the refresh that timed out
  t.equal((await admin(relay, unknown)).status, 201, 'the new key is fetched once the provider answers again')
})

async function expectUnavailable(t: Test, relay: TestRelay, token: string): Promise<void> {
  // Far above the 300 ms fetch timeout, far below forever: only a bound, not a measurement.
  const answer = await withTimeout(admin(relay, token), 5_000, 'an admin answer while the provider hangs')
  t.equal(answer.status, 503, 'admin answers 503')
  t.same(answer.body, UNAVAILABLE)
  t.equal(answer.retryAfter, '5')
  const discovery = await withTimeout(fetch(`${relay.http}/.well-known/relay-config`), 5_000, 'discovery')
  t.equal(discovery.status, 503, 'discovery answers 503')
}

async function otherRoutesAnswer(t: Test, relay: TestRelay): Promise<void> {
  // No session can be created while the provider hangs; the rest of the relay still answers.
  t.equal((await fetch(`${relay.http}/relay/none`)).status, 426, 'the data plane route answers')
  t.equal((await fetch(`${relay.http}/healthz`)).status, 200, 'healthz answers')
}

async function admin(
  relay: TestRelay,
  token: string,
): Promise<{ status: number; body: unknown; retryAfter: string | null }> {
  const response = await fetch(`${relay.http}/admin/sessions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}` },
  })
  const text = await response.text()
  let body: unknown = text
  try {
    body = JSON.parse(text)
  } catch {}
  return { status: response.status, body, retryAfter: response.headers.get('retry-after') }
}

type SlowIssuer = {
  issuer: string
  setMode(mode: Mode): void
  rotate(): Promise<void>
  sign(): Promise<string>
  requests(): number
}

/** An OpenID issuer (discovery and JWKS) that can be told to hang. */
async function slowIssuer(t: Test, initial: Mode): Promise<SlowIssuer> {
  let mode = initial
  let count = 0
  let key = await newKey()
  const hanging: ServerResponse[] = []
  let issuer = ''
  const server = createServer((req, res) => {
    count++
    const path = new URL(req.url ?? '/', 'http://idp').pathname
    const body =
      path === '/.well-known/openid-configuration'
        ? JSON.stringify({
            issuer,
            jwks_uri: `${issuer}/jwks`,
            authorization_endpoint: `${issuer}/auth`,
            token_endpoint: `${issuer}/token`,
          })
        : path === '/jwks'
          ? JSON.stringify({ keys: [key.publicJwk] })
          : null
    if (mode === 'hang') return void hanging.push(res)
    if (body === null) return void res.writeHead(404).end()
    if (mode === 'stall-body') {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(body.length) })
      res.write(body.slice(0, 10))
      return void hanging.push(res)
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(body)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  )
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    issuer,
    setMode(next) {
      mode = next
    },
    async rotate() {
      key = await newKey()
    },
    async sign() {
      return await new SignJWT({ scope: 'relay:session:create relay:session:read' })
        .setProtectedHeader({ alg: 'RS256', kid: key.kid })
        .setIssuer(issuer)
        .setAudience(AUDIENCE)
        .setIssuedAt()
        .setExpirationTime('5m')
        .sign(key.privateKey)
    },
    requests: () => count,
  }
}

async function newKey() {
  const kid = randomUUID()
  const { publicKey, privateKey } = await generateKeyPair('RS256')
  return { kid, privateKey, publicJwk: { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' } }
}
