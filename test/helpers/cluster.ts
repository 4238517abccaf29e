// The control plane under test with a cluster: a namespace of the real API server
// (test/helpers/kube-apiserver.ts) and the control plane pointed at it through a kubeconfig,
// with builders configured and short retry and poll intervals.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Test } from 'tap'
import type { RealCluster } from '../fixtures/kube-real.js'
import * as real from '../fixtures/kube-real.js'
import { realCluster, startKubelet } from '../fixtures/kube-real.js'
import type { KubeApiServer } from './kube-apiserver.js'
import { kubeNamespace } from './kube-apiserver.js'
import type { CuttableProxy } from './tcp-proxy.js'
import { cuttableProxy } from './tcp-proxy.js'
import type { WatchProxy } from './kube-watch-proxy.js'
import { kubeWatchProxy } from './kube-watch-proxy.js'
import type { Relock } from '@session-relay/control/cluster/relocked-image'
import type { BuildT } from '@session-relay/control/model/resources'
import type { ServerDeps } from '@session-relay/control/server'
import type { App, CallOptions, Engine, Store, TestControl } from './control.js'
import { createApp, startTestControl, until } from './control.js'

export const BUILDERS = 'go=builders.test/go:1,js=builders.test/js:1,ts=builders.test/ts:1,rust=builders.test/rust:1'
export const REPOSITORY = 'registry.test/apps'
/** What every built image measures here: registry.test is no registry (the real reading is tested on an OCI layout). */
export const IMAGE_SIZE = 4096

export function tempDir(t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'control-kube-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

export type RealClusterControl = {
  control: TestControl
  kube: RealCluster
  finished: BuildT[]
  proxy: CuttableProxy | null
  watches: WatchProxy | null
}

/**
 * The control plane on the real API server (test/helpers/kube-apiserver.ts): a namespace of its
 * own with a kubelet stand-in for pod logs (kubeletOf), the identity the Role from deploy/ is
 * bound to, and the flags and deps every cluster test shares. `kube` reuses a namespace (a
 * second control plane on the same cluster); `server` is a server of the test's own.
 */
export async function startRealClusterControl(
  t: Test,
  engine: Engine,
  opts: {
    flags?: string[]
    kube?: RealCluster
    /** A server of the test's own (ownKubeApiServer) rather than the file's. */
    server?: KubeApiServer
    store?: Store
    relock?: 'registry' | Relock
    registryClock?: () => number
    proxy?: boolean
    watchProxy?: boolean
    reconcile?: ServerDeps['reconcile']
  } = {},
): Promise<RealClusterControl> {
  let kube = opts.kube
  if (kube === undefined) {
    kube = realCluster(await kubeNamespace(t, tempDir(t), 'apps', opts.server))
    await startKubelet(t, kube)
  }
  // `proxy`: the control plane reaches the API server through a TCP proxy the test can cut.
  let proxy: CuttableProxy | null = null
  let kubeconfig = kube.kubeconfig
  if (opts.proxy === true) {
    proxy = await cuttableProxy(t, Number(new URL(kube.server.url).port))
    kubeconfig = join(tempDir(t), 'kubeconfig-proxied.yaml')
    writeFileSync(
      kubeconfig,
      readFileSync(kube.kubeconfig, 'utf8').replace(kube.server.url, `https://127.0.0.1:${proxy.port}`),
    )
  }
  // `watchProxy`: through an HTTPS proxy that ends or refuses watches and nothing else.
  let watches: WatchProxy | null = null
  if (opts.watchProxy === true) {
    watches = await kubeWatchProxy(t, kube, tempDir(t))
    kubeconfig = watches.kubeconfig
  }
  const { control, finished } = await controlOnCluster(t, engine, kubeconfig, kube.namespace, opts)
  return { control, kube, finished, proxy, watches }
}

/**
 * An application with one successful build, its SpinApp applied and running: the build Job's container ends with the image (the Job
 * controller completes it), the deploy done, and spin-operator's pods for it running ready.
 */
export async function deployRealApp(
  cluster: RealClusterControl,
  name = 'hello',
  opts: { call?: CallOptions; prepare?: (app: App) => Promise<unknown> } = {},
): Promise<App> {
  const { control, kube } = cluster
  const app = await createApp(control, name, {}, opts.call)
  await opts.prepare?.(app)
  const build = (await control.call('POST', `/applications/${app.id}/builds`, opts.call)).body as { id: string }
  await real.succeedJob(kube, `build-${build.id}`, `${REPOSITORY}/${name}@sha256:${'b'.repeat(64)}`)
  await until(
    () => cluster.finished.some((finished) => finished.id === build.id),
    20_000,
    'build finished and its deploy done',
  )
  await real.operateSpinApp(kube, name)
  return app
}

/**
 * The control plane on a cluster (`kubeconfig`, `namespace`), with the flags and deps every
 * cluster test shares: builds it finishes collected, image sizes stubbed, and `relock` the
 * registry's (`'registry'`), the given function, or by default none: the built image runs as it
 * is, the tests' images being in no registry to relock in.
 */
async function controlOnCluster(
  t: Test,
  engine: Engine,
  kubeconfig: string,
  namespace: string,
  opts: {
    flags?: string[]
    store?: Store
    relock?: 'registry' | Relock
    registryClock?: () => number
    reconcile?: ServerDeps['reconcile']
  },
): Promise<{ control: TestControl; finished: BuildT[] }> {
  const finished: BuildT[] = []
  const control = await startTestControl(
    t,
    engine,
    [
      '--dev-insecure-skip-auth',
      '--kubeconfig',
      kubeconfig,
      '--namespace',
      namespace,
      '--builder-images',
      BUILDERS,
      '--image-repository',
      REPOSITORY,
      '--log-level',
      'debug',
      ...(opts.flags ?? []),
    ],
    {
      ...(opts.store !== undefined ? { store: opts.store } : {}),
      deps: {
        cluster: { retryMs: 20, pollMs: 20 },
        onBuildFinished: (build) => finished.push(build),
        measureImage: async () => IMAGE_SIZE,
        ...(opts.relock === 'registry' ? {} : { relock: opts.relock ?? (async (image: string) => image) }),
        ...(opts.registryClock === undefined ? {} : { registryClock: opts.registryClock }),
        ...(opts.reconcile === undefined ? {} : { reconcile: opts.reconcile }),
      },
    },
  )
  await control.server.cluster?.watcher.ready
  return { control, finished }
}
