// The control plane assembled: database (opened and migrated), authentication, the HTTP app,
// and the listening socket; and the reverse on close.
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import type { FastifyInstance } from 'fastify'
import type { SpinAppWatch } from './cluster/spinapp-watch.js'
import { kubeSource } from './cluster/kube-source.js'
import type * as ClusterPartsModule from './cluster/parts.js'
import type { Relock } from './cluster/relocked-image.js'
import type { Cluster } from './cluster/runtime.js'
import type { ControlConfig } from './config.js'
import { buildFinisher } from './domain/build-finished.js'
import { desiredChanges } from './domain/desired-changes.js'
import type { Reconciler, ReconcilerDeps } from './domain/reconcile.js'
import { createReconciler } from './domain/reconcile.js'
import { measureImage } from './domain/image-size.js'
import { variableValues } from './domain/variables.js'
import { buildApp } from './http/app.js'
import { createDraining } from './http/draining.js'
import type { AuthOptions, Authenticator } from './http/auth.js'
import { createAuthenticator } from './http/auth.js'
import type { LocalRuntime, LocalRuntimeDeps } from './local/local.js'
import { startLocalRuntime } from './local/local.js'
import { localRuntime } from './local/runtime.js'
import type { Logger } from './logger.js'
import type { RegistrySigner } from './registry/signing-key.js'
import { loadRegistrySigner } from './registry/signing-key.js'
import type { ControlMetrics } from './metrics/control-metrics.js'
import { createControlMetrics } from './metrics/control-metrics.js'
import type { EmbeddedMetrics } from './metrics/embedded.js'
import { createEmbeddedMetrics } from './metrics/embedded.js'
import type { BuildT } from './model/resources.js'
import { noRuntime } from './runtime/none.js'
import type { FinishBuild, Runtime } from './runtime/runtime.js'
import { secretBox } from './store/secret-box.js'
import type { Database } from './store/db.js'
import { openDatabase } from './store/db.js'
import { migrate } from './store/migrations.js'
import type { TraceStore } from './tracing/store.js'

export type ControlServer = {
  app: FastifyInstance
  db: Database
  /** The counters /metrics serves; `recordBuildFinished` is for whatever sees builds end. */
  metrics: ControlMetrics
  /** Where builds and applications run: the cluster's, this machine's, or none. */
  runtime: Runtime
  /** Brings each application's deployment to what should run (domain/reconcile.ts); tests resync it. */
  reconciler: Reconciler
  /** The cluster runtime's parts, when it is the one (tests wait for its watcher). */
  cluster: Cluster | null
  /** This machine's runtime's parts, when it is the one: no cluster and --runtime is not cluster. */
  local: LocalRuntime | null
  /** Without --prometheus-url, the series the control plane keeps itself (tests sample it). */
  embeddedMetrics: EmbeddedMetrics | null
  /** The port it listens on (the one the OS picked when the address asked for port 0). */
  port: number
  /** Stop accepting, finish requests in flight, close the database. */
  close(): Promise<void>
}

export type ServerDeps = {
  logger: Logger
  /** Tuning for the identity-provider client (timeouts, refresh cooldown); tests shorten them. */
  auth?: Pick<AuthOptions, 'fetchTimeoutMs' | 'refreshCooldownMs' | 'retryMs' | 'now'>
  /** Called once per build that reaches succeeded or failed (metrics hook in here). */
  onBuildFinished?: (build: BuildT) => void
  /** Cluster client timings; tests shorten them. */
  cluster?: { retryMs?: number; pollMs?: number }
  /** The local runtime's programs, toolchain check and variable values; tests replace them. */
  local?: Pick<LocalRuntimeDeps, 'builderMain' | 'toolchains' | 'prepared' | 'variablesFor'>
  /** The size of a built image (config plus layers); tests that reach no registry replace it. */
  measureImage?: (imageRef: string) => Promise<number | null>
  /** How a cluster deploy re-locks the image with the variables' names; tests whose images are in no registry replace it. */
  relock?: Relock
  /** The clock registry credentials are issued and checked by (ms); tests move it rather than wait. */
  registryClock?: () => number
  /** The embedded metrics' clock, and how often they sample by themselves (0: never; tests call sample()). */
  metricsClock?: () => number
  metricsSampleMs?: number
  /** The reconcile's retry back-off and lease; tests shorten them. */
  reconcile?: Pick<ReconcilerDeps, 'backoff' | 'leaseMs'>
  /** The last traces kept in memory, filled by the SDK main.ts started (tracing/store.ts); absent: none. */
  traces?: TraceStore | null
}

export async function startControlPlane(config: ControlConfig, deps: ServerDeps): Promise<ControlServer> {
  const { logger } = deps
  // Read first: a bad key file stops the start before anything opens, not a later build.
  const registrySigner = loadRegistrySigner(config)
  const db = await openDatabase({ url: config.databaseUrl, dataDir: config.dataDir, logger })
  let auth: Authenticator | null = null
  let cluster: Cluster | null = null
  let local: LocalRuntime | null = null
  let runtime: Runtime = noRuntime()
  let reconciler: Reconciler | null = null
  let spinApps: SpinAppWatch | null = null
  // A build's success is told to the reconcile, which needs the runtime that reports it.
  const changes = desiredChanges()
  const embedded = config.prometheusUrl === '' ? embeddedFor(config, deps) : null
  const metrics = createControlMetrics(embedded ?? undefined)
  const finisher = buildFinisher({
    db,
    logger,
    changes,
    measureImage: deps.measureImage ?? ((imageRef: string) => measureImage(config, imageRef, registrySigner)),
    onFinished(build, tenant) {
      metrics.recordBuildFinished(build, tenant)
      deps.onBuildFinished?.(build)
    },
  })
  try {
    const applied = await migrate(db)
    logger.info(
      { engine: db.engine, ...(db.engine === 'pglite' ? { dataDir: config.dataDir } : {}), applied },
      'database ready',
    )
    auth = authenticatorFor(config, deps)
    const found = await clusterFor(config, db, deps, finisher.finish, registrySigner)
    cluster = found?.cluster ?? null
    if (found !== null) {
      runtime = found.parts.clusterRuntime(config, db, found.cluster)
    } else if (config.runtime !== 'cluster') {
      local = await localFor(config, db, deps, finisher.finish, embedded)
      runtime = localRuntime(config, db, local)
      // The key that seals secret variables here: a bad one stops the start, not a later request.
      secretBox(config)
    }
    const started = createReconciler({ db, config, runtime, logger, ...deps.reconcile })
    reconciler = started
    changes.follow(started.reconcile)
    // A SpinApp deleted or edited by hand is applied again at once, not at the next resync.
    // The worker reloads what it ran after a restart; the resync finds what it could not.
    local?.hosts.onRestart(() => void started.resync().catch(() => {}))
    const changed = (appId: string): void => void started.reconcile(appId)
    spinApps =
      found && found.parts.watchSpinApps({ kube: found.cluster.kube, logger, changed, retryMs: deps.cluster?.retryMs })
    // On this machine what ran before is up again before the first request is taken (an
    // invoke right after a restart answers); a cluster's is applied in the background, so an
    // unreachable API server does not hold the start.
    // With no runtime nothing can run: no resync either.
    const first = cluster === null && local === null ? Promise.resolve() : started.start(config.resyncIntervalMs)
    if (local !== null) await first
    else first.catch((error: unknown) => logger.warn({ reason: (error as Error).message }, 'first resync failed'))
    const draining = createDraining()
    const app = await buildApp(config, {
      db,
      logger,
      auth,
      metrics,
      runtime,
      deployments: started,
      draining,
      registrySigner,
      embeddedMetrics: embedded === null ? null : { store: embedded, workloads: local !== null },
      traces: deps.traces ?? null,
      ...(deps.registryClock === undefined ? {} : { registryClock: deps.registryClock }),
    })
    // An empty host means every interface.
    await app.listen({ host: config.addr.host === '' ? '0.0.0.0' : config.addr.host, port: config.addr.port })
    const { port } = app.server.address() as AddressInfo
    logger.info({ host: config.addr.host || '*', port }, 'control plane listening')
    const authenticator = auth
    const running = runtime
    return {
      app,
      db,
      metrics,
      runtime,
      reconciler: started,
      cluster,
      local,
      embeddedMetrics: embedded,
      port,
      async close() {
        // Unready first, still serving, so the load balancer stops sending before the listener closes.
        draining.draining = true
        if (config.shutdownDelayMs > 0) {
          logger.info({ delayMs: config.shutdownDelayMs }, 'unready; serving until the delay ends')
          await new Promise((resolve) => setTimeout(resolve, config.shutdownDelayMs))
        }
        await app.close()
        await spinApps?.close()
        await started.close()
        await running.close()
        // After the runtime: its last counts are written, and nothing samples a closed worker.
        await embedded?.close()
        authenticator?.close()
        await finisher.settled()
        await db.close()
        logger.info('control plane stopped')
      },
    }
  } catch (error) {
    auth?.close()
    await spinApps?.close()
    await reconciler?.close()
    // Whatever runtime had started (the assignments follow their starts with no await between).
    await runtime.close()
    await embedded?.close()
    await finisher.settled()
    await db.close().catch(() => {})
    throw error
  }
}

function authenticatorFor(config: ControlConfig, deps: ServerDeps): Authenticator | null {
  const { logger } = deps
  if (config.devInsecureSkipAuth) {
    logger.warn(
      'AUTHENTICATION IS OFF (PLATFORM_DEV_INSECURE_SKIP_AUTH): anyone who can reach this port can create, change and delete every application; never run this outside development',
    )
    return null
  }
  if (config.oidcAudience === '')
    logger.warn(
      'no --oidc-audience (PLATFORM_OIDC_AUDIENCE): id tokens issued to any client of the issuer are accepted',
    )
  return createAuthenticator({
    issuer: config.oidcIssuer,
    audience: config.oidcAudience,
    requiredClaim: config.requiredClaim,
    tenantClaim: config.tenantClaim,
    adminClaim: config.adminClaim,
    readonlyClaim: config.readonlyClaim,
    logger,
    minRefreshMs: config.jwksMinRefreshMs,
    maxRefreshMs: config.jwksMaxRefreshMs,
    ...deps.auth,
  })
}

type ClusterParts = typeof ClusterPartsModule

// The cluster's modules are loaded only when a cluster is configured: they load the
// Kubernetes client, about 980 modules the embedded default has no use for. The build watcher
// starts with the process: its first list resumes the builds a restart interrupted. It never
// blocks the start: an unreachable cluster is retried in the background.
async function clusterFor(
  config: ControlConfig,
  db: Database,
  deps: ServerDeps,
  finish: FinishBuild,
  registrySigner: RegistrySigner | null,
): Promise<{ cluster: Cluster; parts: ClusterParts } | null> {
  const { logger } = deps
  const source = config.runtime === 'local' ? null : kubeSource(config)
  if (source === null) {
    if (config.runtime === 'cluster')
      logger.warn(
        'no cluster configured (no --kubeconfig, not in a cluster, no default kubeconfig) and --runtime cluster: builds, deploy, invoke and logs answer 503',
      )
    else if (config.runtime === 'auto')
      logger.info(
        'no cluster configured (no --kubeconfig, not in a cluster, no default kubeconfig): builds and deployments run on this machine',
      )
    return null
  }
  const parts = await import('./cluster/parts.js')
  const kube = parts.connectKube(config, source)
  logger.info({ namespace: kube.namespace, inCluster: kube.inCluster }, 'cluster configured')
  const watcher = parts.startBuildWatcher({ kube, db, logger, retryMs: deps.cluster?.retryMs, finish })
  const pullSecrets =
    registrySigner === null
      ? null
      : parts.tenantPullSecrets({
          kube,
          config,
          signer: registrySigner,
          db,
          logger,
          now: deps.registryClock ?? Date.now,
        })
  const pollMs = deps.cluster?.pollMs ?? 1000
  return { parts, cluster: { kube, watcher, pollMs, relock: deps.relock, registrySigner, pullSecrets } }
}

// A data directory that cannot be written (a read-only file system in a pod without
// Prometheus) leaves the metrics endpoints answering 503, not the process unable to start.
function embeddedFor(config: ControlConfig, deps: ServerDeps): EmbeddedMetrics | null {
  const dir = join(config.dataDir, 'metrics')
  try {
    return createEmbeddedMetrics({
      dir,
      retentionMs: config.metricsRetentionMs,
      ...(deps.metricsClock === undefined ? {} : { now: deps.metricsClock }),
      ...(deps.metricsSampleMs === undefined ? {} : { sampleMs: deps.metricsSampleMs }),
      onError: (error) => deps.logger.warn({ reason: (error as Error).message }, 'metrics sample failed'),
    })
  } catch (error) {
    deps.logger.warn({ dir, reason: (error as Error).message }, 'no metrics without Prometheus: cannot write here')
    return null
  }
}

function localFor(
  config: ControlConfig,
  db: Database,
  deps: ServerDeps,
  finish: FinishBuild,
  metrics: EmbeddedMetrics | null,
): Promise<LocalRuntime> {
  return startLocalRuntime({
    metrics,
    config,
    db,
    logger: deps.logger,
    // The values now, secrets unsealed, at every deploy: a new value needs no rebuild.
    variablesFor: (app) => variableValues(config, app),
    ...deps.local,
    finish,
  })
}
