// A go application in the (fake) cluster, as a user meets it: the control plane's build Job runs
// the go builder (stock Go, the WAGI executor), which pushes to a real registry; the fake
// spin-operator's shim pulls the SpinApp's image, checks it and serves it through the wasmtime
// worker, WAGI as Spin runs it; invoke through the control plane answers with the template's
// text. Needs Go on PATH (as builder-go.test.ts). The Job's DEPENDENCY_CACHE is the builder
// tests' .cache/test-go-deps: Go's standard library for wasip1 compiles once (96-116 s), not
// in every run (docs/testing.md).
import { mkdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { templateFiles } from '@session-relay/spin/templates'
import { operateSpinApps, runBuildJobs } from '../fixtures/kube-runners.js'
import { SECRETS } from '../fixtures/kube-secrets.js'
import { startFakeCluster } from '../fixtures/kube.js'
import { startClusterControl, tempDir, NAMESPACE } from '../helpers/cluster.js'
import { createApp, firstFunction, until } from '../helpers/control.js'
import { dockerConfigDir, startRegistry } from '../helpers/registry.js'

const BUILD_TIMEOUT = 600_000
const LOAD_TIMEOUT = 180_000
t.setTimeout(BUILD_TIMEOUT + LOAD_TIMEOUT + 60_000)
const deps = join(fileURLToPath(new URL('../../', import.meta.url)), '.cache', 'test-go-deps')

type Build = { id: string; status: string; imageRef: string | null; error: string | null }

t.test(
  'go in the cluster: Job → go builder → registry → SpinApp → shim (WAGI) → invoke answers with the template',
  async (t) => {
    mkdirSync(deps, { recursive: true })
    const registry = await startRegistry(t, { auth: true })
    const dockerConfig = await dockerConfigDir(t, registry.host, registry.credentials!)
    const fake = await startFakeCluster(t, tempDir(t), NAMESPACE)
    runBuildJobs(t, fake, { dockerConfig, dependencyCache: deps })
    operateSpinApps(t, fake, { dockerConfig })
    const { control } = await startClusterControl(t, 'pglite', {
      fake,
      flags: ['--image-repository', `${registry.host}/apps`, '--builder-registry-secret', 'registry-credentials'],
    })
    fake.put(SECRETS, {
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'kubernetes.io/dockerconfigjson',
      metadata: { name: 'registry-credentials' },
      data: { '.dockerconfigjson': readFileSync(join(dockerConfig, 'config.json')).toString('base64') },
    })

    const app = await createApp(control, 'hello-go', { language: 'go' })
    const fn = firstFunction(app)
    t.equal(
      (
        await control.call('PUT', `/applications/${app.id}/functions/${fn.id}/source`, {
          json: { files: templateFiles('go', fn.name) },
        })
      ).status,
      200,
    )
    const started = (await control.call('POST', `/applications/${app.id}/builds`)).body as Build
    let build: Build | undefined
    await until(
      async () => {
        build = (await control.call('GET', `/applications/${app.id}/builds/${started.id}`)).body as Build
        return build.status === 'succeeded' || build.status === 'failed'
      },
      BUILD_TIMEOUT,
      'the build to end',
    )
    t.equal(build?.status, 'succeeded', build?.error ?? '')
    t.match(
      build?.imageRef,
      new RegExp(`^${registry.host.replace(/\./g, '\\.')}/apps/hello-go@sha256:[0-9a-f]{64}$`),
      'the digest the builder pushed',
    )

    // The worker compiles the 5.7 MB module at its first load.
    await until(
      async () =>
        ((await control.call('GET', `/applications/${app.id}`)).body as { deployment: { ready: boolean } | null })
          .deployment?.ready === true,
      LOAD_TIMEOUT,
      'the SpinApp ready',
    )
    const reply = await control.call('POST', `/applications/${app.id}/functions/${fn.id}/invoke`, {
      json: { method: 'GET', path: '/through/the/proxy' },
    })
    t.equal(reply.status, 200)
    t.match(reply.body, {
      status: 200,
      body: `hello from ${fn.name}\n`,
      headers: { 'x-request-path': ['/through/the/proxy'] },
    })
  },
)
