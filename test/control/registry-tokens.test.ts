// The control plane as the registry's token server (--registry-token-key), against the real
// distribution registry (Debian's docker-registry) configured for token authentication with the
// control plane's GET /registry/token as its realm. Credentials are minted here with the same
// key, as the control plane mints them for a build's Job, a tenant's pull Secret and its own
// pushes; what each may reach is what the registry lets through.
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { SignJWT } from 'jose'
import fc from 'fast-check'
import t from 'tap'
import type { Test } from 'tap'
import { pullSpinApp, pushSpinApp } from '@session-relay/spin/artifact'
import { parseRef } from '@session-relay/spin/ref'
import { openStore } from '@session-relay/spin/store'
import type { Grant } from '@session-relay/control/registry/credentials'
import { dockerConfigJson, mintCredential } from '@session-relay/control/registry/credentials'
import type { RegistrySigner } from '@session-relay/control/registry/signing-key'
import { loadRegistrySigner, REGISTRY_TOKEN_ISSUER } from '@session-relay/control/registry/signing-key'
import { createBuild, finishBuild, markRunning } from '@session-relay/control/store/builds'
import { createApp, startTestControl } from '../helpers/control.js'
import type { TestControl } from '../helpers/control.js'
import { tempDir } from '../helpers/cluster.js'
import { startRegistry } from '../helpers/registry.js'
import { selfSignedCertificate } from '../helpers/tls.js'

const SERVICE = 'test-registry'

const app = {
  lockedApp: {
    spin_lock_version: 1 as const,
    triggers: [{ id: 'a-http-trigger', trigger_type: 'http', trigger_config: { component: 'a', route: '/...' } }],
    components: [{ id: 'a', source: { content_type: 'application/wasm' } }],
  },
  wasm: new Map([['a', Buffer.from('registry token wasm')]]),
}

type Setup = { control: TestControl; signer: RegistrySigner; host: string }

const DAY_MS = 24 * 3_600_000

/** The control plane with a token key, and the registry trusting it; `clock` is the token server's. */
async function setup(t: Test, extraFlags: string[] = [], clock?: () => number): Promise<Setup> {
  const { certPath, keyPath } = await selfSignedCertificate(t)
  const keyFile = join(tempDir(t), 'registry-token.pem')
  await writeFile(keyFile, `${await readFile(keyPath, 'utf8')}${await readFile(certPath, 'utf8')}`, { mode: 0o600 })
  // The registry's port is not known yet: --image-repository is only the path's owner here.
  const control = await startTestControl(
    t,
    'pglite',
    [
      '--dev-insecure-skip-auth',
      '--runtime',
      'cluster',
      '--registry-token-key',
      keyFile,
      '--registry-token-service',
      SERVICE,
      '--image-repository',
      'registry.invalid/apps',
      ...extraFlags,
    ],
    clock === undefined ? {} : { deps: { registryClock: clock } },
  )
  const registry = await startRegistry(t, {
    token: { realm: `${control.url}/registry/token`, service: SERVICE, issuer: REGISTRY_TOKEN_ISSUER, certPath },
  })
  const signer = loadRegistrySigner({ registryTokenKey: keyFile, registryTokenService: SERVICE })!
  return { control, signer, host: registry.host }
}

async function configDir(t: Test, host: string, credential: string): Promise<string> {
  const dir = tempDir(t)
  await writeFile(join(dir, 'config.json'), dockerConfigJson([host], credential))
  return dir
}

async function push(t: Test, host: string, repository: string, credential: string): Promise<string> {
  const ref = parseRef(`${host}/${repository}:v1`)
  return (await pushSpinApp(await openStore(ref, { dockerConfigDir: await configDir(t, host, credential) }), 'v1', app))
    .digest
}

async function pull(t: Test, host: string, repository: string, credential: string): Promise<string> {
  const ref = parseRef(`${host}/${repository}:v1`)
  return (await pullSpinApp(await openStore(ref, { dockerConfigDir: await configDir(t, host, credential) }), 'v1'))
    .digest
}

const basic = (credential: string): string => `Basic ${Buffer.from(`wasmkube:${credential}`).toString('base64')}`

t.test(
  "a build's credential pushes and pulls its own application's repository while the build runs, nothing else",
  async (t) => {
    const { control, signer, host } = await setup(t)
    const hello = await createApp(control, 'hello', { language: 'js' })
    await createApp(control, 'other', { language: 'js' })
    const build = await createBuild(control.server.db, hello.id)
    await markRunning(control.server.db, build!.id)
    const own = await mintCredential(signer, { kind: 'build', build: build!.id, repository: 'apps/hello' }, 60_000)
    const control2 = await mintCredential(
      signer,
      { kind: 'control', repository: 'apps/other', actions: ['pull', 'push'] },
      60_000,
    )
    await push(t, host, 'apps/other', control2)

    const digest = await push(t, host, 'apps/hello', own)
    t.equal(await pull(t, host, 'apps/hello', own), digest, 'its own repository: push and pull')
    await t.rejects(push(t, host, 'apps/other', own), "another application's repository: no push")
    await t.rejects(pull(t, host, 'apps/other', own), 'nor pull')

    await finishBuild(control.server.db, build!.id, {
      status: 'succeeded',
      imageRef: `${host}/apps/hello@${digest}`,
      log: null,
    })
    await t.rejects(pull(t, host, 'apps/hello', own), 'once the build has finished its credential opens nothing')
  },
)

t.test("a tenant's pull credential pulls that tenant's repositories only, and never pushes", async (t) => {
  const { control, signer, host } = await setup(t)
  const mine = await createApp(control, 'mine', { language: 'js' })
  t.equal(mine.tenant, 'default')
  const pusher = await mintCredential(
    signer,
    { kind: 'control', repository: 'apps/mine', actions: ['pull', 'push'] },
    60_000,
  )
  const digest = await push(t, host, 'apps/mine', pusher)
  const stranger = await mintCredential(
    signer,
    { kind: 'control', repository: 'apps/stranger', actions: ['pull', 'push'] },
    60_000,
  )
  await push(t, host, 'apps/stranger', stranger)

  const tenant = await mintCredential(signer, { kind: 'tenant', tenant: 'default' }, DAY_MS)
  t.equal(await pull(t, host, 'apps/mine', tenant), digest, "its tenant's application")
  await t.rejects(push(t, host, 'apps/mine', tenant), 'pull only')
  await t.rejects(pull(t, host, 'apps/stranger', tenant), 'a repository of no application of the tenant')
  const other = await mintCredential(signer, { kind: 'tenant', tenant: 'someone-else' }, DAY_MS)
  await t.rejects(pull(t, host, 'apps/mine', other), "another tenant's credential")
})

t.test('the token endpoint refuses what it did not sign, what expired and what it is not for', async (t) => {
  const { control, signer, host } = await setup(t)
  const url = `${control.url}/registry/token?service=${SERVICE}&scope=repository:apps/hello:pull`
  const answer = async (authorization?: string, at = url): Promise<Response> =>
    fetch(at, authorization === undefined ? {} : { headers: { authorization } })

  const anonymous = await answer()
  t.equal(anonymous.status, 401)
  t.match(anonymous.headers.get('www-authenticate'), /^Basic realm=/)
  t.match(await anonymous.json(), { error: /registry credential/ })
  t.equal((await answer('Basic !!!')).status, 401, 'not base64')
  t.equal((await answer(basic('not-a-jwt'))).status, 401, 'not a credential')

  const expired = await mintCredential(
    signer,
    { kind: 'control', repository: 'apps/hello', actions: ['pull'] },
    -60_000,
  )
  t.equal((await answer(basic(expired))).status, 401, 'an expired credential')

  const stranger = await setupForeignSigner(t)
  t.equal(
    (await answer(basic(await mintCredential(stranger, { kind: 'tenant', tenant: 'default' }, DAY_MS)))).status,
    401,
    'signed by another key',
  )

  // A registry token (audience: the service) is not a credential, and a credential is no token.
  const valid = await mintCredential(
    signer,
    { kind: 'control', repository: 'apps/hello', actions: ['pull', 'push'] },
    60_000,
  )
  const granted = await answer(basic(valid))
  t.equal(granted.status, 200)
  t.equal(granted.headers.get('cache-control'), 'no-store')
  const { token, expires_in: expiresIn } = (await granted.json()) as { token: string; expires_in: number }
  t.equal(expiresIn, 300)
  t.equal((await answer(basic(token))).status, 401, 'a registry token presented as a credential')
  const asToken = await fetch(`http://${host}/v2/apps/hello/tags/list`, {
    headers: { authorization: `Bearer ${valid}` },
  })
  t.equal(asToken.status, 401, 'a credential presented to the registry as a token')

  const wrongService = await answer(
    basic(valid),
    `${control.url}/registry/token?service=elsewhere&scope=repository:apps/hello:pull`,
  )
  t.equal(wrongService.status, 400)
  t.match(await wrongService.json(), { error: /service: this token server signs for test-registry/ })

  // The registry refuses a token of ours once it has expired.
  const old = await new SignJWT({ access: [{ type: 'repository', name: 'apps/hello', actions: ['pull'] }] })
    .setProtectedHeader({ alg: 'RS256', x5c: signer.x5c })
    .setIssuer(REGISTRY_TOKEN_ISSUER)
    .setAudience(SERVICE)
    .setSubject('control-plane')
    .setIssuedAt(Math.floor(Date.now() / 1000) - 600)
    .setNotBefore(Math.floor(Date.now() / 1000) - 600)
    .setExpirationTime(Math.floor(Date.now() / 1000) - 300)
    .setJti('expired')
    .sign(signer.privateKey)
  t.equal(
    (await fetch(`http://${host}/v2/apps/hello/tags/list`, { headers: { authorization: `Bearer ${old}` } })).status,
    401,
    'an expired registry token',
  )
})

t.test(
  "a tenant's pull credential works until its expiry by the token server's clock, and one without an expiry never",
  async (t) => {
    let now = Date.now()
    const { control, signer, host } = await setup(t, [], () => now)
    await createApp(control, 'mine', { language: 'js' })
    const pusher = await mintCredential(
      signer,
      { kind: 'control', repository: 'apps/mine', actions: ['pull', 'push'] },
      DAY_MS,
    )
    const digest = await push(t, host, 'apps/mine', pusher)
    const url = `${control.url}/registry/token?service=${SERVICE}&scope=repository:apps/mine:pull`
    const status = async (credential: string): Promise<number> =>
      (await fetch(url, { headers: { authorization: basic(credential) } })).status

    const issued = now
    const tenant = await mintCredential(signer, { kind: 'tenant', tenant: 'default' }, DAY_MS, issued)
    const claims = JSON.parse(Buffer.from(tenant.split('.')[1]!, 'base64url').toString()) as {
      iat: number
      exp: number
    }
    t.equal(claims.exp - claims.iat, DAY_MS / 1000, 'it says when it expires: a day after it was issued')
    t.equal(await pull(t, host, 'apps/mine', tenant), digest, 'pulls while fresh')
    now = issued + DAY_MS - 60_000
    t.equal(await status(tenant), 200, 'a minute before its expiry')
    now = issued + DAY_MS + 1000
    t.equal(await status(tenant), 401, 'a second past it: refused')
    await t.rejects(pull(t, host, 'apps/mine', tenant), 'so the registry lets nothing through')
    now = issued
    t.equal(await status(tenant), 200, 'the same credential, by a clock back at its issue')

    // The credential pull Secrets held before they expired: signed by the right key, no exp.
    const forever = await new SignJWT({ grant: { kind: 'tenant', tenant: 'default' } })
      .setProtectedHeader({ alg: signer.alg })
      .setIssuer(REGISTRY_TOKEN_ISSUER)
      .setAudience(`${SERVICE}#credential`)
      .setIssuedAt()
      .sign(signer.privateKey)
    t.equal(await status(forever), 401, 'a credential without an expiry is refused')
    await t.rejects(pull(t, host, 'apps/mine', forever))
  },
)

async function setupForeignSigner(t: Test): Promise<RegistrySigner> {
  const { certPath, keyPath } = await selfSignedCertificate(t)
  const file = join(tempDir(t), 'foreign.pem')
  await writeFile(file, `${await readFile(keyPath, 'utf8')}${await readFile(certPath, 'utf8')}`)
  return loadRegistrySigner({ registryTokenKey: file, registryTokenService: SERVICE })!
}

t.test('hostile queries and credentials: never a 5xx, never more than the grant', async (t) => {
  const { control, signer } = await setup(t)
  const credentials: Array<{ grant: Grant; allows: (name: string, action: string) => boolean }> = [
    {
      grant: { kind: 'control', repository: 'apps/hello', actions: ['pull'] },
      allows: (name, action) => name === 'apps/hello' && action === 'pull',
    },
    { grant: { kind: 'tenant', tenant: 'default' }, allows: () => false },
  ]
  const minted = await Promise.all(credentials.map(async ({ grant }) => mintCredential(signer, grant, 60_000)))
  const scope = fc.oneof(
    fc.string({ maxLength: 80 }),
    fc
      .tuple(
        fc.constantFrom('repository', 'registry', 'x'),
        fc.constantFrom('apps/hello', 'apps/other', 'apps/hello:5000', ''),
        fc.subarray(['pull', 'push', '*', 'delete']),
      )
      .map(([type, name, actions]) => `${type}:${name}:${actions.join(',')}`),
  )
  await fc.assert(
    fc.asyncProperty(
      fc.nat(minted.length - 1),
      fc.array(scope, { maxLength: 20 }),
      fc.option(fc.string({ maxLength: 40 }), { nil: undefined }),
      async (which, scopes, service) => {
        const query = new URLSearchParams([
          ...scopes.map((s) => ['scope', s] as [string, string]),
          ...(service === undefined ? [] : [['service', service] as [string, string]]),
        ])
        const reply = await fetch(`${control.url}/registry/token?${query.toString()}`, {
          headers: { authorization: basic(minted[which]!) },
        })
        const body = (await reply.json()) as { token?: string }
        if (reply.status >= 500) return false
        if (reply.status !== 200) return reply.status === 400
        const [, payload] = body.token!.split('.')
        const { access } = JSON.parse(Buffer.from(payload!, 'base64url').toString()) as {
          access: Array<{ name: string; actions: string[] }>
        }
        return access.every((entry) => entry.actions.every((action) => credentials[which]!.allows(entry.name, action)))
      },
    ),
    { numRuns: 150, seed: 20261126 },
  )
  t.pass('150 hostile queries')
})

t.test('a bad key file stops the start, naming the setting', async (t) => {
  const dir = tempDir(t)
  await writeFile(join(dir, 'only-key.pem'), '-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n')
  const load = (file: string): RegistrySigner | null =>
    loadRegistrySigner({ registryTokenKey: file, registryTokenService: SERVICE })
  t.equal(load(''), null, 'empty: no token server')
  t.throws(() => load(join(dir, 'missing.pem')), {
    name: 'ConfigError',
    message: /--registry-token-key \(PLATFORM_REGISTRY_TOKEN_KEY\): cannot read .*ENOENT/,
  })
  t.throws(() => load(join(dir, 'only-key.pem')), { message: /holds no certificate/ })
  const { certPath, keyPath } = await selfSignedCertificate(t)
  const other = await selfSignedCertificate(t)
  await writeFile(
    join(dir, 'mismatch.pem'),
    `${await readFile(keyPath, 'utf8')}${await readFile(other.certPath, 'utf8')}`,
  )
  t.throws(() => load(join(dir, 'mismatch.pem')), { message: /is not the private key's/ })
  await writeFile(join(dir, 'fine.pem'), `${await readFile(keyPath, 'utf8')}${await readFile(certPath, 'utf8')}`)
  t.match(load(join(dir, 'fine.pem')), { alg: 'RS256', service: SERVICE })
})
