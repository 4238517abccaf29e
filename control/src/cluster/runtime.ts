// The runtime in a Kubernetes cluster: builds as Jobs (followed by build-watcher.ts), each
// application a SpinApp with what it owns, invoke through its Service, logs from its pods,
// secret variables in the application's Secret.
import type { ClusterRuntimeConfig } from './settings.js'
import { NotFoundError, UnavailableError } from '@session-relay/common/errors'
import type { LanguageT } from '../model/resources.js'
import { buildLogGone } from '../runtime/none.js'
import type { Runtime } from '../runtime/runtime.js'
import { MAX_STORED_LOG_BYTES } from '../runtime/build-outcome.js'
import { sendInvoke } from '../runtime/send-invoke.js'
import { hasBuilds, markJobCreated } from '../store/builds.js'
import type { Database } from '../store/db.js'
import type { RegistrySigner } from '../registry/signing-key.js'
import {
  APPLICATION_LABEL,
  BUILD_LABEL,
  createBuildJob,
  deleteBuildResources,
  refuseLargeArchive,
} from './build-jobs.js'
import { buildRegistryConfig } from './registry-credentials.js'
import type { BuildWatcher } from './build-watcher.js'
import { deployToCluster } from './deploy.js'
import type { TenantPullSecrets } from './pull-secret.js'
import { serviceCarrier } from './invoke.js'
import type { Kube } from './kube.js'
import { containerState, listPods, openPodLog, readPodLog } from './pod-logs.js'
import type { Relock } from './relocked-image.js'
import { relockedImage } from './relocked-image.js'
import { APP_NAME_LABEL, deleteSpinApp, readDeployment, spinAppDrifted } from './spinapps.js'
import { writeSecretValues } from './variables-secret.js'

export type Cluster = {
  kube: Kube
  watcher: BuildWatcher
  /** Interval of the look for a build pod whose container has not started yet. */
  pollMs: number
  /** How a deploy re-locks the image with the variables' names; relockReference unless a test replaces it. */
  relock?: Relock | undefined
  /** The registry token key, when the control plane is the registry's token server. */
  registrySigner?: RegistrySigner | null | undefined
  /** With the token server: the tenants' pull Secrets, renewed before their credentials expire. */
  pullSecrets?: TenantPullSecrets | null | undefined
}

/** Why this configuration cannot build `language`, or null. */
function cannotBuild(config: ClusterRuntimeConfig, language: LanguageT): UnavailableError | null {
  if (config.builderImages[language] === '')
    return new UnavailableError(`no builder image for ${language}: set PLATFORM_BUILDER_IMAGES`)
  if (config.imageRepository === '')
    return new UnavailableError('no image repository for builds: set PLATFORM_IMAGE_REPOSITORY')
  return null
}

export function clusterRuntime(config: ClusterRuntimeConfig, db: Database, cluster: Cluster): Runtime {
  const { kube } = cluster
  return {
    checkBuild: (language, archiveBytes) =>
      new Promise((resolve) => {
        const refusal = cannotBuild(config, language)
        if (refusal !== null) throw refusal
        resolve(refuseLargeArchive(archiveBytes))
      }),
    async startBuild(app, buildId, archive) {
      // The row says its Job is not created yet, so no replica's resync takes it for lost until
      // markJobCreated (or the grace in store/builds.ts, should this process die in between).
      await createBuildJob(
        kube,
        config,
        app,
        buildId,
        archive,
        await buildRegistryConfig(config, cluster.registrySigner ?? null, app.clusterName, buildId),
      )
      await markJobCreated(db, buildId)
    },
    async buildLog(buildId, finished, options) {
      const [pod] = await listPods(kube, `${BUILD_LABEL}=${buildId}`)
      if (pod === undefined && finished) throw buildLogGone()
      if (pod !== undefined && containerState(pod) === 'terminated')
        return { kind: 'text', text: await readPodLog(kube, pod, MAX_STORED_LOG_BYTES) }
      if (pod !== undefined && containerState(pod) === 'running')
        return { kind: 'stream', upstream: await openPodLog(kube, pod, options) }
      return { kind: 'not-started' }
    },
    logPollMs: cluster.pollMs,
    checkDeploy: () => {},
    async deploy(app, image) {
      const running = await relockedImage(kube, config, image, app.settings, {
        relock: cluster.relock,
        signer: cluster.registrySigner ?? null,
      })
      return deployToCluster(kube, config, app, running, cluster.pullSecrets ?? null)
    },
    drifted: (app, applied) => spinAppDrifted(kube, app.clusterName, (applied.spec ?? {}) as Record<string, unknown>),
    deployment: (app, image) =>
      readDeployment(
        kube,
        config,
        { name: app.clusterName, replicas: app.settings.replicas ?? config.replicas },
        image,
      ),
    invoke: (app, request) =>
      sendInvoke(serviceCarrier(kube, app.clusterName, request.method), request, config.invokeTimeoutMs),
    async openLog(app, options) {
      const pods = await listPods(kube, `${APP_NAME_LABEL}=${app.clusterName}`)
      const pod =
        pods.find((p) => containerState(p) === 'running') ?? pods.find((p) => containerState(p) === 'terminated')
      if (pod === undefined) throw new NotFoundError('no pod of this application has started')
      return openPodLog(kube, pod, options)
    },
    async storeSecrets(app, secrets) {
      // The Secret ends up holding exactly the secrets given; the control plane never reads it back.
      const values: Record<string, string> = {}
      const stored: Record<string, { secret: true }> = {}
      for (const [name, secret] of secrets) {
        if (secret !== true) values[name] = Buffer.from(secret, 'utf8').toString('base64')
        stored[name] = { secret: true }
      }
      const removed = Object.entries(app.settings.variables)
        .filter(([name, variable]) => 'secret' in variable && !secrets.has(name))
        .map(([name]) => name)
      if (Object.keys(values).length > 0 || removed.length > 0) await writeSecretValues(kube, app, values, removed)
      return stored
    },
    async remove(app) {
      // The application's Secret of variables may exist before any build.
      const hasSecrets = Object.values(app.settings.variables).some((variable) => 'secret' in variable)
      if (hasSecrets || (await hasBuilds(db, app.id))) {
        await deleteSpinApp(kube, app.clusterName)
        await deleteBuildResources(kube, `${APPLICATION_LABEL}=${app.id}`)
      }
    },
    close: () => {
      cluster.pullSecrets?.close()
      return cluster.watcher.close()
    },
  }
}
