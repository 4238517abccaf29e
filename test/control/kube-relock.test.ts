// A deploy in the cluster re-locks the built image with the application's variable names, in a
// real distribution registry (htpasswd) with the push credentials read from the
// --builder-registry-secret Secret of the real Kubernetes API server (test/helpers/kube-apiserver.ts,
// the control plane with deploy/'s Role, which grants get on that Secret alone): the SpinApp runs the relocked
// artifact, pinned by digest and mapped to --image-pull-repository; a relock that fails keeps
// the running SpinApp, and the answer (or, after a build, the deployment's message) says why
// without any credential. No build: a small Spin
// artifact pushed by the test stands for the builder's.
import { readdirSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import type { Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { pullSpinApp, pushSpinApp } from '@session-relay/spin/artifact'
import { parseRef } from '@session-relay/spin/ref'
import { openStore } from '@session-relay/spin/store'
import type { RealCluster } from '../fixtures/kube-real.js'
import { SECRET, SPINAPP, succeedJob } from '../fixtures/kube-real.js'
import { startRealClusterControl } from '../helpers/cluster.js'
import { createApp, until } from '../helpers/control.js'
import { dockerConfigDir, startRegistry } from '../helpers/registry.js'

const CREDENTIALS_SECRET = 'registry-credentials'
const PULL = 'pull.example:5000/apps'
const SECRET_VALUE = 'relock-secret-value-5d1c'
const WRONG_PASSWORD = 'not-the-password-91be'

type Spec = { image: string; variables?: unknown[] }

const dockerConfigJson = (host: string, username: string, password: string): string =>
  Buffer.from(
    JSON.stringify({ auths: { [host]: { auth: Buffer.from(`${username}:${password}`).toString('base64') } } }),
  ).toString('base64')

const ownTempDirs = (): string[] => readdirSync(tmpdir()).filter((name) => name.startsWith('control-registry-'))

// Each file starts its own API server, and every test a control plane on it.
t.setTimeout(300_000)

/** The registry credentials' Secret, created or replaced as an operator would (kubectl apply). */
async function putCredentials(kube: RealCluster, dockerConfigJson: string): Promise<void> {
  const secret = {
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'kubernetes.io/dockerconfigjson',
    metadata: { name: CREDENTIALS_SECRET },
    data: { '.dockerconfigjson': dockerConfigJson },
  }
  await kube.must(
    'PATCH',
    `${kube.path(SECRET, CREDENTIALS_SECRET)}?fieldManager=operator&force=true`,
    JSON.stringify(secret),
    'application/apply-patch+yaml',
  )
}

/** The names of the Secrets the control plane read (get), from the audit log. */
const secretsRead = (kube: RealCluster): string[] =>
  kube.server
    .audit()
    .filter((a) => a.user.username === kube.user && a.objectRef?.resource === 'secrets' && a.verb === 'get')
    .map((a) => a.objectRef?.name ?? '')

const specOf = async (kube: RealCluster, name: string): Promise<Spec | undefined> =>
  (await kube.get(SPINAPP, name))?.spec as Spec | undefined

t.test('the SpinApp runs the image relocked with the variable names; a failed relock keeps it', async (t) => {
  const registry = await startRegistry(t, { auth: true })
  const { username, password } = registry.credentials!
  const { control, kube, finished } = await startRealClusterControl(t, 'pglite', {
    relock: 'registry',
    flags: [
      '--image-repository',
      `${registry.host}/apps`,
      '--image-pull-repository',
      PULL,
      '--builder-registry-secret',
      CREDENTIALS_SECRET,
    ],
  })
  await putCredentials(kube, dockerConfigJson(registry.host, username, password))

  // What a build would have pushed: one component, its wasm and its lock.
  const store = await openStore(parseRef(`${registry.host}/apps/hello:b1`), {
    dockerConfigDir: await dockerConfigDir(t, registry.host, registry.credentials!),
  })
  const pushed = await pushSpinApp(store, 'b1', {
    lockedApp: {
      spin_lock_version: 1,
      metadata: { name: 'hello', version: '0.1.0' },
      triggers: [
        { id: 'hello-http-trigger', trigger_type: 'http', trigger_config: { component: 'hello', route: '/hello/...' } },
      ],
      components: [
        { id: 'hello', metadata: { allowed_outbound_hosts: [] }, source: { content_type: 'application/wasm' } },
      ],
    },
    wasm: new Map([['hello', Buffer.from('\0asm\x01\0\0\0')]]),
  })
  const app = await createApp(control, 'hello')
  const build = (await control.call('POST', `/applications/${app.id}/builds`)).body as { id: string }
  await succeedJob(kube, `build-${build.id}`, `${registry.host}/apps/hello@${pushed.digest}`)
  await until(() => finished.some((b) => b.id === build.id), 20_000, 'the SpinApp applied')
  t.equal(
    (await specOf(kube, 'hello'))?.image,
    `${PULL}/hello@${pushed.digest}`,
    'no variables: the built image as is, as the nodes pull it',
  )
  t.same(secretsRead(kube), [], 'no variables: no credential read')

  const patched = await control.call('PATCH', `/applications/${app.id}`, {
    json: { variables: { greeting: { value: 'hej' }, token: { secret: SECRET_VALUE } } },
  })
  t.equal(patched.status, 200)
  t.match(patched.body, { deployment: { message: /^re-applied with the new settings/ } })
  const spec = (await specOf(kube, 'hello')) as Spec
  const digest = spec.image.slice(`${PULL}/hello@`.length)
  t.match(
    spec.image,
    new RegExp(`^${PULL.replace(/\./g, '\\.')}/hello@sha256:[0-9a-f]{64}$`),
    'digest-pinned, in the pull repository',
  )
  t.not(digest, pushed.digest, 'another artifact than the build')
  t.same(spec.variables, [
    { name: 'greeting', value: 'hej' },
    { name: 'token', valueFrom: { secretKeyRef: { name: 'hello-variables', key: 'token' } } },
  ])
  const relocked = await pullSpinApp(store, digest)
  t.same(
    relocked.lockedApp.variables,
    { greeting: {}, token: { secret: true } },
    'the lock in the registry declares the names',
  )
  t.same(relocked.lockedApp.components[0]!.config, { greeting: '{{ greeting }}', token: '{{ token }}' })
  t.same(
    relocked.manifest.layers[0]!.digest,
    (await pullSpinApp(store, pushed.digest)).manifest.layers[0]!.digest,
    "the compiled layer is the build's",
  )
  t.ok(secretsRead(kube).length > 0, 'the credentials were read')
  t.same(
    secretsRead(kube).filter((name) => name !== CREDENTIALS_SECRET),
    [],
    'no other Secret is read',
  )
  t.same(ownTempDirs(), [], "the credentials' directory is gone after the push")

  // Credentials the registry refuses: the new name cannot be declared, the SpinApp stays.
  await putCredentials(kube, dockerConfigJson(registry.host, username, WRONG_PASSWORD))
  const refused = await control.call('PATCH', `/applications/${app.id}`, {
    json: { variables: { greeting: { value: 'hallo' }, colour: { value: 'blue' }, token: { secret: true } } },
  })
  t.equal(refused.status, 200, 'the settings are saved')
  t.match(refused.body, {
    deployment: {
      message:
        /^saved but not applied \(the image could not be re-locked with the variables' names \(.+\); the running deployment is unchanged\); retried with back-off, or POST deploy applies them now/,
    },
  })
  t.same(await specOf(kube, 'hello'), spec, 'the running SpinApp is kept as it was')
  const redeploy = await control.call('POST', `/applications/${app.id}/deploy`)
  t.equal(redeploy.status, 503)
  t.match(redeploy.body, { error: /could not be re-locked/ })

  // After a build no answer can say it: the deployment's message does, until a deploy applies.
  const rebuild = (await control.call('POST', `/applications/${app.id}/builds`)).body as { id: string }
  await succeedJob(kube, `build-${rebuild.id}`, `${registry.host}/apps/hello@${pushed.digest}`)
  await until(() => finished.some((b) => b.id === rebuild.id), 20_000, 'the build recorded and its deploy tried')
  const afterBuild = await control.call('GET', `/applications/${app.id}`)
  t.match(afterBuild.body, {
    deployment: {
      message:
        /^the newest build is not deployed \(the image could not be re-locked with the variables' names \(.+\); the running deployment is unchanged\); retried with back-off, or POST deploy tries again now; /,
    },
  })
  t.same(await specOf(kube, 'hello'), spec)

  // No Secret at all: said by name.
  await kube.must('DELETE', kube.path(SECRET, CREDENTIALS_SECRET))
  const missing = await control.call('POST', `/applications/${app.id}/deploy`)
  t.equal(missing.status, 503)
  t.same(missing.body, {
    error: `--builder-registry-secret: no Secret ${CREDENTIALS_SECRET} in namespace ${kube.namespace}`,
  })
  t.same(await specOf(kube, 'hello'), spec)
  t.same(ownTempDirs(), [])

  // The credentials back: the deploy applies the saved settings, and the message is the SpinApp's again.
  await putCredentials(kube, dockerConfigJson(registry.host, username, password))
  const since = Date.now()
  t.equal((await control.call('POST', `/applications/${app.id}/deploy`)).status, 202)
  t.comment(`POST deploy with a new name (credentials read, relock pushed, SpinApp applied): ${Date.now() - since} ms`)
  const applied = (await specOf(kube, 'hello')) as Spec
  t.not(applied.image, spec.image, 'a lock that declares colour too')
  t.match(applied.variables, [
    { name: 'colour', value: 'blue' },
    { name: 'greeting', value: 'hallo' },
    { name: 'token' },
  ])
  const fine = await control.call('GET', `/applications/${app.id}`)
  t.notMatch((fine.body as { deployment: { message: string } }).deployment.message, /not deployed/)

  const everything = [
    patched.text,
    refused.text,
    redeploy.text,
    missing.text,
    afterBuild.text,
    fine.text,
    control.logText(),
  ].join('\n')
  for (const value of [password, WRONG_PASSWORD, SECRET_VALUE])
    t.notOk(everything.includes(value), `${value} is in no answer and no log line`)
})

t.test('without --builder-registry-secret the control plane pushes with its own --docker-config', async (t) => {
  const registry = await startRegistry(t, { auth: true })
  const dockerConfig = await dockerConfigDir(t, registry.host, registry.credentials!)
  const { control, kube, finished } = await startRealClusterControl(t, 'pglite', {
    relock: 'registry',
    flags: ['--image-repository', `${registry.host}/apps`, '--docker-config', dockerConfig],
  })
  const store = await openStore(parseRef(`${registry.host}/apps/solo:b1`), { dockerConfigDir: dockerConfig })
  const pushed = await pushSpinApp(store, 'b1', {
    lockedApp: {
      spin_lock_version: 1,
      triggers: [
        { id: 'solo-http-trigger', trigger_type: 'http', trigger_config: { component: 'solo', route: '/...' } },
      ],
      components: [{ id: 'solo', source: { content_type: 'application/wasm' } }],
    },
    wasm: new Map([['solo', Buffer.from('\0asm\x01\0\0\0')]]),
  })
  const app = await createApp(control, 'solo')
  t.equal(
    (await control.call('PATCH', `/applications/${app.id}`, { json: { variables: { greeting: { value: 'hej' } } } }))
      .status,
    200,
  )
  const build = (await control.call('POST', `/applications/${app.id}/builds`)).body as { id: string }
  await succeedJob(kube, `build-${build.id}`, `${registry.host}/apps/solo@${pushed.digest}`)
  await until(() => finished.some((b) => b.id === build.id), 20_000, 'the build recorded and deployed')
  const image = ((await specOf(kube, 'solo')) as Spec).image
  t.match(image, /@sha256:[0-9a-f]{64}$/)
  t.not(
    image,
    `${registry.host}/apps/solo@${pushed.digest}`,
    'relocked after the build, with the variable set before it',
  )
  t.same((await pullSpinApp(store, image.slice(image.indexOf('@') + 1))).lockedApp.variables, { greeting: {} })
  t.same(secretsRead(kube), [], 'no Secret read')

  // No credentials now (the file is read at each push): the next build's deploy (another
  // image: the same one runs already, so there would be nothing to apply) fails, which the
  // deployment says until the application goes.
  const other = await pushSpinApp(store, 'b2', {
    lockedApp: {
      spin_lock_version: 1,
      triggers: [
        { id: 'solo-http-trigger', trigger_type: 'http', trigger_config: { component: 'solo', route: '/...' } },
      ],
      components: [{ id: 'solo', source: { content_type: 'application/wasm' } }],
    },
    wasm: new Map([['solo', Buffer.from('\0asm\x01\0\0\0\0')]]),
  })
  writeFileSync(join(dockerConfig, 'config.json'), '{}')
  const again = (await control.call('POST', `/applications/${app.id}/builds`)).body as { id: string }
  await succeedJob(kube, `build-${again.id}`, `${registry.host}/apps/solo@${other.digest}`)
  await until(() => finished.some((b) => b.id === again.id), 20_000, 'the second build recorded')
  t.match((await control.call('GET', `/applications/${app.id}`)).body, {
    deployment: { message: /^the newest build is not deployed \(the image could not be re-locked/ },
  })
  t.match((await control.call('GET', `/applications/${app.id}`)).body, {
    deployment: { conditions: [{ type: 'Deployed', status: 'False', reason: 'ApplyFailed' }, { type: 'Ready' }] },
  })
  t.equal((await control.call('DELETE', `/applications/${app.id}`)).status, 204)
  const kept = await control.server.db.query('SELECT 1 FROM deployments WHERE application_id = $1', [app.id])
  t.same(kept, [], 'forgotten with the application')
})

t.test(
  'a registry that never answers: the PATCH answers within the relock timeout, the SpinApp kept',
  { timeout: 60_000 },
  async (t) => {
    // Accepts connections and says nothing, as a black-holed registry would.
    const sockets = new Set<Socket>()
    const silent = createServer((socket) => {
      sockets.add(socket)
    })
    t.teardown(
      () =>
        new Promise<void>((resolve) => {
          for (const socket of sockets) socket.destroy()
          silent.close(() => resolve())
        }),
    )
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
    const host = `127.0.0.1:${(silent.address() as { port: number }).port}`
    const { control, kube, finished } = await startRealClusterControl(t, 'pglite', {
      relock: 'registry',
      flags: ['--image-repository', `${host}/apps`],
    })
    const app = await createApp(control, 'mute')
    const build = (await control.call('POST', `/applications/${app.id}/builds`)).body as { id: string }
    const image = `${host}/apps/mute@sha256:${'d'.repeat(64)}`
    await succeedJob(kube, `build-${build.id}`, image)
    await until(
      () => finished.some((b) => b.id === build.id),
      20_000,
      'deployed without variables: no registry request',
    )
    const reply = await control.call('PATCH', `/applications/${app.id}`, {
      json: { variables: { greeting: { value: 'hej' } } },
    })
    t.equal(reply.status, 200)
    // The relock's own per-request timeout ended the wait, not the test's or the client's.
    t.match(reply.body, {
      deployment: {
        message: /^saved but not applied \(the image could not be re-locked with the variables' names \([^)]*timeout/,
      },
    })
    t.equal((await specOf(kube, 'mute'))?.image, image, 'the SpinApp kept its image')
  },
)
