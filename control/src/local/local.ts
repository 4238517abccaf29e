// The runtime on this machine, for a control plane that has no cluster: builds as child
// processes of the builder program, artifacts in an OCI layout under the data directory (or
// the configured registry), deployments loaded into one worker process, each on a loopback
// port. At start it fails the builds a previous process left running; the reconcile
// (domain/reconcile.ts) brings the deployed applications back up.
import { existsSync, mkdirSync, rmSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import type { LocalRuntimeConfig } from './settings.js'
import type { ConcurrencyInForce, ResourcesT } from '../model/app-settings.js'
import type { Logger } from '../logger.js'
import type { EmbeddedMetrics } from '../metrics/embedded.js'
import type { BuildApplication, FinishBuild } from '../runtime/runtime.js'
import type { StoredApplication } from '../store/applications.js'
import { prepareCompiledDir } from './compiled-dir.js'
import type { Database } from '../store/db.js'
import type { LocalBuilds } from './builds.js'
import { createLocalBuilds } from './builds.js'
import type { LocalHosts } from './hosts.js'
import { createLocalHosts } from './hosts.js'
import { instanceMemoryBytes } from './memory-limit.js'
import { workerSampler } from './metrics-sampler.js'
import type { ToolchainCheck } from './programs.js'
import { programPath, shippedProgram, toolchainCheck, workerProgram } from './programs.js'
import type { LocalToolchains } from './toolchains.js'
import { localToolchains } from './toolchains.js'

/** The toolchains directory's js engine seed, left by control planes before preinit. */
export const LEFTOVER_JS_SEED = 'js-engine-seed'

export type LocalRuntime = {
  builds: LocalBuilds
  hosts: LocalHosts
  /** Why this machine cannot build the language (the missing tool and how to get it), or null. */
  cannotBuild: ToolchainCheck
  /** Where a build's artifact goes: {repository}/{app}:{build} when one is configured, else an OCI layout in the data directory. */
  imageRefFor(app: BuildApplication, buildId: string): string
  /** The builder program, or a 503 naming what is missing. */
  builder(): string
  /** Run `image` for the application with its variables' values now (`variablesFor`) and its resources and concurrency in force: a restart. */
  deploy(app: DeployTarget, image: string): Promise<void>
  /** Unload the application and drop its stored images: it is being deleted. */
  forget(app: { id: string; clusterName: string }): Promise<void>
  close(): Promise<void>
}

export type LocalRuntimeDeps = {
  config: LocalRuntimeConfig
  db: Database
  logger: Logger
  /** Told how each build ended (it records, deploys and counts). */
  finish: FinishBuild
  /** Without Prometheus: where the worker's counters go, sampled (null: Prometheus reads them elsewhere). */
  metrics?: EmbeddedMetrics | null
  /** Tests point these at other programs or another PATH. */
  builderMain?: string
  toolchains?: ToolchainCheck
  /** What prepares a missing go or rust toolchain at a build (toolchains.ts); tests give stand-ins. */
  prepared?: LocalToolchains
  restartBackoff?: { initialMs: number; maxMs: number }
  /** The application's variable values (name to value) a deployment gets; none when absent. */
  variablesFor?: (app: StoredApplication) => Promise<Record<string, string>>
}

type DeployTarget = StoredApplication & { resources: ResourcesT; concurrency: ConcurrencyInForce }

export async function startLocalRuntime(deps: LocalRuntimeDeps): Promise<LocalRuntime> {
  const { config, db, logger } = deps
  const root = resolve(config.dataDir, 'runtime')
  mkdirSync(root, { recursive: true, mode: 0o700 })
  // Credentials for a configured registry, as the cluster mounts them for the builder.
  const env: Record<string, string> = {
    ...(config.dockerConfig === null ? {} : { DOCKER_CONFIG: config.dockerConfig }),
    ...(config.registryInsecure ? { INSECURE_REGISTRY: 'true' } : {}),
  }
  const deploy = async (app: DeployTarget, image: string): Promise<void> => {
    // The values are looked up while the deployment already counts as starting (an invoke waits for it).
    await hosts.deploy(app, image, deps.variablesFor?.(app) ?? {}, {
      memoryBytes: instanceMemoryBytes(app.resources.memoryLimit),
      maxConcurrentRequests: app.concurrency.maxRunning,
      maxQueuedRequests: app.concurrency.maxQueued,
    })
  }
  const builder = (): string =>
    programPath(deps.builderMain ?? '', 'builders/dist/main.js', 'the builder (npm run build makes it)')
  const workerDir = join(root, 'worker')
  const compiledDir = config.localCacheDir !== '' ? resolve(config.localCacheDir) : join(workerDir, 'compiled')
  // Made here, private: the worker would create it with the process's umask.
  mkdirSync(workerDir, { recursive: true, mode: 0o700 })
  prepareCompiledDir(
    compiledDir,
    config.localCacheDir !== '' ? '--local-cache-dir' : 'the compiled components in --data-dir',
  )
  const hosts = createLocalHosts({
    logger,
    dir: workerDir,
    worker: () => workerProgram(config.localWorker),
    cacheDir: compiledDir,
    // In the data directory whatever --local-cache-dir says: the worker's own, never shared.
    functionsCacheDir: join(workerDir, 'functions'),
    baselineFirst: config.localBaselineFirst,
    allowPrivateOutbound: config.localAllowPrivateOutbound,
    threads: config.localWorkerThreads,
    ...(config.localMemoryBudgetBytes === null ? {} : { memoryBudgetBytes: config.localMemoryBudgetBytes }),
    // Each application's share of the worker's instance pool (worker/README.md, "Admission").
    limits: {
      maxConcurrentRequests: config.localMaxConcurrentRequests,
      maxQueuedRequests: config.localMaxQueuedRequests,
    },
    ...(config.localIdleTimeoutMs > 0 ? { idle: { timeoutMs: config.localIdleTimeoutMs } } : {}),
    registry: { dockerConfigDir: config.dockerConfig, insecure: config.registryInsecure },
    ...(deps.restartBackoff === undefined ? {} : { restartBackoff: deps.restartBackoff }),
  })
  const toolchainsDir =
    config.localToolchainsDir !== '' ? resolve(config.localToolchainsDir) : join(resolve(config.dataDir), 'toolchains')
  // Control planes before the js builds' preinit kept a js engine seed here (about 20 MB a
  // componentize-js version); nothing reads it now.
  rmSync(join(toolchainsDir, LEFTOVER_JS_SEED), { recursive: true, force: true })
  const prepared =
    deps.prepared ??
    localToolchains({
      dir: toolchainsDir,
      // debootstrap and chroot live in sbin, which a user's PATH may lack.
      path: `${process.env.PATH ?? ''}:/usr/local/sbin:/usr/sbin:/sbin:/usr/bin:/bin`,
      goProxy: config.localGoProxy,
      isRoot: process.getuid?.() === 0,
      rustRootSetting: config.rustRoot,
      checkoutRustRoot: shippedProgram('.cache/rust-wasm/current'),
      rustScript: shippedProgram('scripts/rust-wasm-root.sh'),
    })
  // The worker's build makes the js builds' pre-initializer beside it (js-preinit.ts in the
  // builder); a worker from elsewhere may come without one, and js builds then use wizer.
  const jsPreinit = (): Record<string, string> => {
    let worker: string
    try {
      worker = workerProgram(config.localWorker)
    } catch {
      return {}
    }
    const preinit = join(dirname(worker), 'preinit')
    return existsSync(preinit) ? { JS_PREINITIALIZER: preinit } : {}
  }
  const builds = createLocalBuilds({
    db,
    logger,
    dir: join(root, 'builds'),
    cacheDir: join(root, 'dependencies'),
    builder,
    concurrency: config.localBuilds,
    timeoutMs: config.buildTimeoutMs,
    env,
    finish: deps.finish,
    prepare: async (language, write) => ({
      ...(await prepared.prepare(language, write)),
      ...(language === 'js' || language === 'ts' ? jsPreinit() : {}),
    }),
  })
  const metrics = deps.metrics ?? null
  metrics?.addSource(workerSampler(metrics, () => hosts.stats()))
  await builds.recover()
  hosts.reapOrphans()
  logger.info(
    { dir: root, registry: config.imageRepository || null, concurrency: config.localBuilds },
    'no cluster: builds and deployments run on this machine',
  )
  return {
    builds,
    hosts,
    cannotBuild: deps.toolchains ?? toolchainCheck(undefined, undefined, undefined, undefined, prepared),
    imageRefFor: (app, buildId) =>
      config.imageRepository !== ''
        ? `${config.imageRepository}/${app.clusterName}:${buildId}`
        : `oci-layout:${join(root, 'images', app.clusterName)}:${buildId}`,
    builder,
    deploy,
    async forget(app) {
      await hosts.remove(app.id)
      metrics?.forgetApp(app.id)
      rmSync(join(root, 'images', app.clusterName), { recursive: true, force: true })
      rmSync(join(root, 'dependencies', app.clusterName), { recursive: true, force: true })
    },
    async close() {
      prepared.close()
      await builds.close()
      await hosts.close()
    },
  }
}
