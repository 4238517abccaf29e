// A tenant's registry pull Secret in the cluster when the control plane is the registry's token
// server: its credential expires (--registry-pull-credential-ttl), the Secret is renewed at a
// deploy and, past half the credential's life, by the periodic check; the real distribution
// registry (Debian's docker-registry, token auth with the control plane as realm) pulls with
// what the Secret holds until it expires, and never after. The clock is injected and moved: no
// test waits a day. On the real Kubernetes API server (test/helpers/kube-apiserver.ts).
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import type { Test } from 'tap'
import { pullSpinApp, pushSpinApp } from '@session-relay/spin/artifact'
import { parseRef } from '@session-relay/spin/ref'
import { openStore } from '@session-relay/spin/store'
import { PULL_EXPIRES_ANNOTATION, tenantPullSecretName } from '@session-relay/control/cluster/pull-secret'
import { dockerConfigJson, mintCredential } from '@session-relay/control/registry/credentials'
import { loadRegistrySigner, REGISTRY_TOKEN_ISSUER } from '@session-relay/control/registry/signing-key'
import type { TenantPullSecrets } from '@session-relay/control/cluster/pull-secret'
import type { RealCluster } from '../fixtures/kube-real.js'
import { SECRET } from '../fixtures/kube-real.js'
import { deployRealApp, startRealClusterControl, tempDir } from '../helpers/cluster.js'
import { until } from '../helpers/control.js'
import type { RealClusterControl } from '../helpers/cluster.js'
import { startRegistry } from '../helpers/registry.js'
import { selfSignedCertificate } from '../helpers/tls.js'

const SERVICE = 'pull-registry'
const HOUR_MS = 3_600_000

const app = {
  lockedApp: {
    spin_lock_version: 1 as const,
    triggers: [{ id: 'a-http-trigger', trigger_type: 'http', trigger_config: { component: 'a', route: '/...' } }],
    components: [{ id: 'a', source: { content_type: 'application/wasm' } }],
  },
  wasm: new Map([['a', Buffer.from('pull secret wasm')]]),
}

type Setup = { cluster: RealClusterControl; host: string; pullSecrets: TenantPullSecrets; clock: { now: number } }

async function setup(t: Test, ttl: string): Promise<Setup> {
  const { certPath, keyPath } = await selfSignedCertificate(t)
  const keyFile = join(tempDir(t), 'registry-token.pem')
  await writeFile(keyFile, `${await readFile(keyPath, 'utf8')}${await readFile(certPath, 'utf8')}`, { mode: 0o600 })
  const clock = { now: Date.now() }
  const cluster = await startRealClusterControl(t, 'pglite', {
    flags: [
      ...['--registry-token-key', keyFile, '--registry-token-service', SERVICE],
      ...['--registry-pull-credential-ttl', ttl],
    ],
    registryClock: () => clock.now,
  })
  const registry = await startRegistry(t, {
    token: {
      realm: `${cluster.control.url}/registry/token`,
      service: SERVICE,
      issuer: REGISTRY_TOKEN_ISSUER,
      certPath,
    },
  })
  // The image a tenant's pods pull: pushed with the control plane's own kind of credential.
  const signer = loadRegistrySigner({ registryTokenKey: keyFile, registryTokenService: SERVICE })!
  const pusher = await mintCredential(
    signer,
    { kind: 'control', repository: 'apps/hello', actions: ['pull', 'push'] },
    HOUR_MS,
  )
  const ref = parseRef(`${registry.host}/apps/hello:v1`)
  await pushSpinApp(await openStore(ref, { dockerConfigDir: await configDir(t, registry.host, pusher) }), 'v1', app)
  const pullSecrets = cluster.control.server.cluster?.pullSecrets
  if (pullSecrets == null) throw new Error('no pull Secrets with a token key')
  return { cluster, host: registry.host, pullSecrets, clock }
}

async function configDir(t: Test, host: string, credential: string): Promise<string> {
  const dir = tempDir(t)
  await writeFile(join(dir, 'config.json'), dockerConfigJson([host], credential))
  return dir
}

type Held = { credential: string; iat: number; exp: number; annotations: Record<string, string> }

/** The credential the tenant's Secret holds now, as a pod's containerd would present it. */
async function held(kube: RealCluster, tenant: string): Promise<Held> {
  const secret = await kube.get(SECRET, tenantPullSecretName(tenant))
  if (secret === undefined) throw new Error(`no pull Secret for ${tenant}`)
  const config = JSON.parse(
    Buffer.from((secret.data as Record<string, string>)['.dockerconfigjson']!, 'base64').toString(),
  ) as { auths: Record<string, { auth: string }> }
  const auth = Buffer.from(Object.values(config.auths)[0]!.auth, 'base64').toString()
  const credential = auth.slice(auth.indexOf(':') + 1)
  const claims = JSON.parse(Buffer.from(credential.split('.')[1]!, 'base64url').toString()) as {
    iat: number
    exp: number
  }
  const annotations = (secret.metadata.annotations as Record<string, string> | undefined) ?? {}
  return { credential, ...claims, annotations }
}

async function pulls(t: Test, host: string, credential: string): Promise<boolean> {
  const ref = parseRef(`${host}/apps/hello:v1`)
  try {
    await pullSpinApp(await openStore(ref, { dockerConfigDir: await configDir(t, host, credential) }), 'v1')
    return true
  } catch {
    return false
  }
}

t.test(
  "a deploy writes the tenant's pull Secret with an expiring credential; renewed past half its life; the old one dies at its expiry",
  async (t) => {
    const { cluster, host, pullSecrets, clock } = await setup(t, '24h')
    const started = clock.now
    await deployRealApp(cluster, 'hello')
    const first = await held(cluster.kube, 'default')
    t.equal(first.iat, Math.floor(started / 1000), 'issued by the injected clock')
    t.equal(first.exp - first.iat, 24 * 3600, 'expires after --registry-pull-credential-ttl')
    t.equal(first.annotations[PULL_EXPIRES_ANNOTATION], new Date(started + 24 * HOUR_MS).toISOString())
    t.equal(first.annotations['platform.wasmkube.dev/tenant'], 'default')
    t.ok(await pulls(t, host, first.credential), "the registry lets the Secret's credential pull the tenant's image")

    clock.now = started + 11 * HOUR_MS
    t.same(await pullSecrets.renewDue(), [], 'before half its life: left as it is')
    t.equal((await held(cluster.kube, 'default')).credential, first.credential)

    clock.now = started + 13 * HOUR_MS
    t.same(await pullSecrets.renewDue(), ['default'], 'past half its life: renewed')
    const second = await held(cluster.kube, 'default')
    t.not(second.credential, first.credential, 'a new credential')
    t.equal(second.exp, Math.floor((started + 13 * HOUR_MS) / 1000) + 24 * 3600, 'a day from the renewal')
    t.equal(second.annotations[PULL_EXPIRES_ANNOTATION], new Date(started + 37 * HOUR_MS).toISOString())
    t.same(await pullSecrets.renewDue(), [], 'renewed once, not at every check')
    t.ok(await pulls(t, host, first.credential), 'the old credential still works until its own expiry')

    clock.now = started + 24 * HOUR_MS + 1000
    t.notOk(await pulls(t, host, first.credential), 'past its expiry the token server refuses the old one')
    t.ok(await pulls(t, host, second.credential), 'the renewed Secret pulls on')

    // A redeploy writes a fresh one whatever its age.
    clock.now = started + 25 * HOUR_MS
    await deployRealApp(cluster, 'hello-again')
    t.equal((await held(cluster.kube, 'default')).iat, Math.floor(clock.now / 1000), 'a deploy renews it')
  },
)

t.test('tenants without a deployment get no pull Secret; a control plane started later renews at once', async (t) => {
  const { cluster, pullSecrets, clock } = await setup(t, '2h')
  t.same(await pullSecrets.renewDue(), [], 'nothing deployed: nothing written')
  t.equal(await cluster.kube.get(SECRET, tenantPullSecretName('default')), undefined)
  await deployRealApp(cluster, 'hello')
  const written = await held(cluster.kube, 'default')
  t.equal(written.exp - written.iat, 2 * 3600, 'the configured life')
  // What a restart sees: a process that wrote nothing yet renews every deployed tenant's Secret.
  await cluster.control.close()
  clock.now += 1000
  const restarted = await startRealClusterControl(t, 'pglite', {
    kube: cluster.kube,
    store: cluster.control.store,
    flags: [
      ...['--registry-token-key', cluster.control.config.registryTokenKey],
      ...['--registry-token-service', SERVICE, '--registry-pull-credential-ttl', '2h'],
    ],
    registryClock: () => clock.now,
  })
  await until(
    async () => (await held(cluster.kube, 'default')).iat === Math.floor(clock.now / 1000),
    20_000,
    'the new process to renew the Secret at its start',
  )
  t.same(await restarted.control.server.cluster?.pullSecrets?.renewDue(), [], 'renewed at its start, once')
})
