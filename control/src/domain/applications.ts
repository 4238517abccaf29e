// An application as the API shows and removes it: the stored rows together with what runs in
// the cluster.
import { APPLICATION_LABEL, deleteBuildResources } from '../cluster/build-jobs.js'
import type { Cluster } from '../cluster/cluster.js'
import { deleteSpinApp, readDeployment } from '../cluster/spinapps.js'
import type { ControlConfig } from '../config.js'
import type { AppSettings } from '../model/app-settings.js'
import type { ApplicationT } from '../model/resources.js'
import type { DeploymentT } from '../cluster/spinapps.js'
import type { StoredApplicationDetail } from '../store/applications.js'
import { deleteApplication, findApplication, getApplication } from '../store/applications.js'
import { hasBuilds, latestImage } from '../store/builds.js'
import type { Database } from '../store/db.js'
import type { LocalRuntime } from '../local/local.js'
import type { DeploymentStatus } from '../local/hosts.js'
import { applicationNotFound } from './not-found.js'
import { resourcesInForce } from './policy.js'
import { unresolvedVariables, variablesView } from './variables.js'

export type ApplicationDeps = { db: Database; config: ControlConfig; cluster: Cluster | null; local?: LocalRuntime | null | undefined }

/** The settings as answers show them: replicas defaulted, the resources in force, no secret. */
function settingsView (config: ControlConfig, settings: AppSettings): Pick<ApplicationT, 'replicas' | 'autoscaling' | 'resources' | 'variables'> {
  return {
    replicas: settings.replicas ?? config.replicas,
    autoscaling: settings.autoscaling,
    resources: resourcesInForce(config, settings.resources),
    variables: variablesView(settings.variables),
  }
}

/** The stored application in the API's shape, with its deployment. */
export function applicationView (config: ControlConfig, stored: StoredApplicationDetail, deployment: DeploymentT | null): ApplicationT {
  const { clusterName, settings, ...rest } = stored
  void clusterName
  // The size is the build's: the newest build that made the image deployed.
  const built = deployment === null ? undefined : stored.builds.find((build) => build.imageRef === deployment.image) ?? stored.builds.find((build) => build.status === 'succeeded')
  const size = built?.imageSizeBytes ?? null
  return { ...rest, ...settingsView(config, settings), deployment: deployment === null ? null : { ...deployment, imageSizeBytes: size } }
}

/** The application with its functions, builds and, once it has a successful build, its deployment. */
export async function describeApplication ({ db, config, cluster, local }: ApplicationDeps, appId: string): Promise<ApplicationT> {
  const application = await getApplication(db, appId)
  if (application === null) throw applicationNotFound()
  if (cluster === null && local != null) {
    const image = await latestImage(db, application.id)
    if (image === null) return applicationView(config, application, null)
    const deployment = localDeployment(application.name, image, local.hosts.status(application.id))
    const unresolved = unresolvedVariables({ cluster }, application)
    if (unresolved.length > 0) deployment.message += `; not given to the function here (a secretRef needs a cluster): ${unresolved.join(', ')}`
    return applicationView(config, application, deployment)
  }
  // Nothing can be deployed without a cluster, so there is no deployment to show.
  const image = cluster === null ? null : await latestImage(db, application.id)
  if (cluster === null || image === null) return applicationView(config, application, null)
  const replicas = application.settings.replicas ?? config.replicas
  const deployment = await readDeployment(cluster.kube, config, { name: application.clusterName, replicas }, image)
  const notApplied = cluster.notApplied?.get(application.id)
  if (notApplied !== undefined) deployment.message = `the newest build is not deployed (${notApplied}); POST deploy tries again; ${deployment.message}`
  return applicationView(config, application, deployment)
}

/** The application, its rows and what it has in the cluster (SpinApp, build Jobs and Secrets). */
export async function removeApplication ({ db, cluster, local }: ApplicationDeps, appId: string): Promise<void> {
  const application = await findApplication(db, appId)
  if (application === null) throw applicationNotFound()
  await local?.forget(application)
  // The cluster first: if it refuses, the application stays and the caller can try again,
  // rather than leaving a running deployment nobody can reach through this API.
  // The application's Secret of variables may exist before any build.
  const hasSecrets = Object.values(application.settings.variables).some((variable) => 'secret' in variable)
  if (cluster !== null && (hasSecrets || await hasBuilds(db, application.id))) {
    await deleteSpinApp(cluster.kube, application.clusterName)
    await deleteBuildResources(cluster.kube, `${APPLICATION_LABEL}=${application.id}`)
  }
  if (!await deleteApplication(db, application.id)) throw applicationNotFound()
  cluster?.notApplied?.delete(application.id)
}

/** A local deployment in the API's shape: one replica, no namespace; its loopback URL is the internal and the public address (the machine's user reaches it there). */
function localDeployment (name: string, image: string, status: DeploymentStatus | null): DeploymentT {
  return {
    image: status?.image ?? image,
    imageSizeBytes: null,
    replicas: 1,
    observedReplicas: status?.running === true ? 1 : 0,
    ready: status?.ready ?? false,
    namespace: '',
    serviceName: name,
    internalUrl: status?.url ?? '',
    publicUrl: status?.url ?? null,
    message: status?.message ?? 'not running: POST deploy starts it',
  }
}
