// Bearer-token registries (the scheme of Docker Hub, GHCR, Harbor): the distribution registry
// on loopback configured for token auth, and a token service written here that checks the
// Docker config.json's basic credentials and signs the registry's JWT (RS256, its certificate
// in x5c, as the registry's token verifier requires). The client follows the challenge's
// realm, service and scope.
import { X509Certificate, createPrivateKey } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { SignJWT } from 'jose'
import t from 'tap'
import type { Test } from 'tap'
import { pullSpinApp, pushSpinApp } from '@session-relay/spin/artifact'
import { parseRef } from '@session-relay/spin/ref'
import { openStore } from '@session-relay/spin/store'
import { dockerConfigDir, startRegistry } from '../helpers/registry.js'
import { selfSignedCertificate } from '../helpers/tls.js'

const SERVICE = 'test-registry'
const ISSUER = 'test-token-service'
const USER = { username: 'builder', password: 'token-test-password' }

type TokenRequest = { scope: string | null; service: string | null; authorized: boolean }

async function startTokenService(
  t: Test,
  certPath: string,
  keyPath: string,
): Promise<{ realm: string; requests: TokenRequest[] }> {
  const key = createPrivateKey(await readFile(keyPath))
  const certificate = new X509Certificate(await readFile(certPath))
  const x5c = [certificate.raw.toString('base64')]
  const requests: TokenRequest[] = []
  const expected = `Basic ${Buffer.from(`${USER.username}:${USER.password}`).toString('base64')}`
  const server = http.createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://127.0.0.1')
    const scope = url.searchParams.get('scope')
    const authorized = request.headers.authorization === expected
    requests.push({ scope, service: url.searchParams.get('service'), authorized })
    if (!authorized) {
      response.writeHead(401).end()
      return
    }
    const [, name = '', actions = ''] = (scope ?? '').split(':')
    void new SignJWT({ access: [{ type: 'repository', name, actions: actions.split(',') }] })
      .setProtectedHeader({ alg: 'RS256', x5c })
      .setIssuer(ISSUER)
      .setAudience(SERVICE)
      .setSubject(USER.username)
      .setIssuedAt()
      .setNotBefore('-1m')
      .setExpirationTime('5m')
      .setJti(String(requests.length))
      .sign(key)
      .then((token) => response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ token })))
  })
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  )
  server.listen(0, '127.0.0.1')
  await new Promise((resolve) => server.once('listening', resolve))
  return { realm: `http://127.0.0.1:${(server.address() as AddressInfo).port}/token`, requests }
}

t.test(
  'a push and pull answer the Bearer challenge with a token from the realm, asked with the config.json credentials',
  async (t) => {
    const { certPath, keyPath } = await selfSignedCertificate(t)
    const tokens = await startTokenService(t, certPath, keyPath)
    const registry = await startRegistry(t, {
      token: { realm: tokens.realm, service: SERVICE, issuer: ISSUER, certPath },
    })
    const ref = parseRef(`${registry.host}/apps/tokened:v1`)
    const app = {
      lockedApp: {
        spin_lock_version: 1 as const,
        triggers: [{ id: 'a-http-trigger', trigger_type: 'http', trigger_config: { component: 'a', route: '/...' } }],
        components: [{ id: 'a', source: { content_type: 'application/wasm' } }],
      },
      wasm: new Map([['a', Buffer.from('token wasm')]]),
    }

    const anonymous = await openStore(ref, { dockerConfigDir: null })
    await t.rejects(pushSpinApp(anonymous, 'v1', app), {
      message: `the token service at ${new URL(tokens.realm).origin} answered 401`,
    })

    const config = await dockerConfigDir(t, registry.host, USER)
    const store = await openStore(ref, { dockerConfigDir: config })
    const pushed = await pushSpinApp(store, 'v1', app)
    const pulled = await pullSpinApp(await openStore(ref, { dockerConfigDir: config }), 'v1')
    t.equal(pulled.digest, pushed.digest)
    const granted = tokens.requests.filter((request) => request.authorized)
    t.ok(granted.length > 0, 'tokens were asked for with the credentials')
    t.ok(
      granted.every((request) => request.service === SERVICE),
      "every token request names the challenge's service",
    )
    // The registry names the actions in either order.
    t.ok(
      granted.some((request) => /^repository:apps\/tokened:(pull,push|push,pull)$/.test(request.scope ?? '')),
      "the push's scope comes from the challenge",
    )
  },
)
