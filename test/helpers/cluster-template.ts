// What the js, go and rust cluster tests share, as a user meets the cluster path, on the real
// API server with Kubernetes' own controllers and spin-operator: the template's source
// uploaded, the control plane's build Job's pod run by the node stand-in (the language's
// builder as a local process, go's and rust's dependency cache kept across runs), the image
// pushed to a real registry, spin-operator's pod for the SpinApp pulled with its pull Secret,
// checked and served through the wasmtime worker (test/fixtures/kube-real-shim.ts), and invoke
// through the control plane and the API server's own service proxy (to the pod's IP, over the
// node network stand-in) answering with the template's text.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Test } from 'tap'
import { templateFiles } from '@session-relay/spin/templates'
import { unpackSpinApp } from '@session-relay/spin/unpack'
import { runBuildJobsReal } from '../fixtures/kube-real-runners.js'
import { runSpinAppPods } from '../fixtures/kube-real-shim.js'
import type { RealCluster } from '../fixtures/kube-real.js'
import { SECRET } from '../fixtures/kube-real.js'
import { startRealClusterControl, tempDir } from './cluster.js'
import type { App, BuildView, Fn, TestControl } from './control.js'
import { buildAndWait, createApp, firstFunction, until } from './control.js'
import { dockerConfigDir, startRegistry } from './registry.js'
import type { TestRegistry } from './registry.js'

export const BUILD_TIMEOUT = 600_000
export const LOAD_TIMEOUT = 180_000

export type TemplateInCluster = {
  control: TestControl
  kube: RealCluster
  registry: TestRegistry
  dockerConfig: string
  app: App
  fn: Fn
  build: BuildView
  /** The build's log (the Job pod's). */
  log: string
}

/**
 * Builds and invokes `language`'s template in the cluster as the application `name`
 * (`hello-{language}` by default). `relock: 'registry'` relocks for real; `buildTimeoutMs` and
 * `loadTimeoutMs` bound the waits for the build and for the SpinApp to be ready.
 */
export async function templateInCluster(
  t: Test,
  language: 'js' | 'go' | 'rust',
  options: {
    dependencyCache?: string
    relock?: 'registry'
    name?: string
    buildTimeoutMs?: number
    loadTimeoutMs?: number
  } = {},
): Promise<TemplateInCluster> {
  const registry = await startRegistry(t, { auth: true })
  const dockerConfig = await dockerConfigDir(t, registry.host, registry.credentials!)
  const { control, kube } = await startRealClusterControl(t, 'pglite', {
    ...(options.relock !== undefined ? { relock: options.relock } : {}),
    flags: [
      '--image-repository',
      `${registry.host}/apps`,
      '--builder-registry-secret',
      'registry-credentials',
      '--image-pull-secret',
      'registry-credentials',
    ],
  })
  // The registry's credentials, as an operator creates them for the overlay's Secret.
  await kube.must('POST', kube.path(SECRET), {
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'kubernetes.io/dockerconfigjson',
    metadata: { name: 'registry-credentials' },
    data: { '.dockerconfigjson': readFileSync(join(dockerConfig, 'config.json')).toString('base64') },
  })
  await runBuildJobsReal(t, kube, {
    dockerConfig,
    ...(options.dependencyCache !== undefined ? { dependencyCache: options.dependencyCache } : {}),
  })
  await runSpinAppPods(t, kube)

  const name = options.name ?? `hello-${language}`
  const app = await createApp(control, name, { language })
  const fn = firstFunction(app)
  t.equal(
    (
      await control.call('PUT', `/applications/${app.id}/functions/${fn.id}/source`, {
        json: { files: templateFiles(language, fn.name) },
      })
    ).status,
    200,
  )
  const build = await buildAndWait(t, control, app.id, options.buildTimeoutMs ?? BUILD_TIMEOUT)
  t.equal(build.status, 'succeeded', build.error ?? '')
  t.match(
    build.imageRef,
    new RegExp(`^${registry.host.replace(/\./g, '\\.')}/apps/${name}@sha256:[0-9a-f]{64}$`),
    'the digest the builder pushed',
  )
  const log = (await control.call('GET', `/applications/${app.id}/builds/${build.id}/logs`)).text

  // The worker compiles the module at its first load (go's is 5.7 MB).
  await until(
    async () =>
      ((await control.call('GET', `/applications/${app.id}`)).body as { deployment: { ready: boolean } | null })
        .deployment?.ready === true,
    options.loadTimeoutMs ?? LOAD_TIMEOUT,
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
  return { control, kube, registry, dockerConfig, app, fn, build, log }
}

/** The first 8 bytes of the component the build pushed, read back as the shim reads it. */
export async function componentHeader(t: Test, run: TemplateInCluster): Promise<string> {
  const unpacked = await unpackSpinApp(run.build.imageRef ?? '', join(tempDir(t), 'wasm'), {
    dockerConfigDir: run.dockerConfig,
  })
  return readFileSync(unpacked.components[run.fn.name] as string)
    .subarray(0, 8)
    .toString('hex')
}
