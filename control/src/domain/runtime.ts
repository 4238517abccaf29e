// What runs in the cluster, as the runtime routes ask for it: re-deploying the newest image,
// one request to a deployed function, and the application pod's log.
import type { Readable } from 'node:stream'
import type { Cluster } from '../cluster/cluster.js'
import { clusterNotConfigured } from '../cluster/kube.js'
import { containerState, listPods, openPodLog } from '../cluster/pod-logs.js'
import { APP_NAME_LABEL } from '../cluster/spinapps.js'
import type { ControlConfig } from '../config.js'
import { ConflictError, NotFoundError, UnavailableError } from '../errors.js'
import type { LocalRuntime } from '../local/local.js'
import { findApplication } from '../store/applications.js'
import { latestImage } from '../store/builds.js'
import type { Database } from '../store/db.js'
import { getFunction } from '../store/functions.js'
import type { InvokeRequestT, InvokeResultT } from './invoke.js'
import { invoke, prepareInvoke } from './invoke.js'
import { deployApplication } from './deploy.js'
import { applicationNotFound, functionNotFound } from './not-found.js'

export type RuntimeDeps = { db: Database; config: ControlConfig; cluster: Cluster | null; local?: LocalRuntime | null | undefined }

/** Apply the SpinApp again with the image of the newest successful build; that image. */
export async function redeploy ({ db, config, cluster, local }: RuntimeDeps, appId: string): Promise<{ appId: string; image: string }> {
  const application = await findApplication(db, appId)
  if (application === null) throw applicationNotFound()
  if (cluster === null && local == null) throw clusterNotConfigured()
  const image = await latestImage(db, application.id)
  if (image === null) throw new ConflictError('nothing to deploy: the application has no successful build yet')
  await deployApplication({ config, cluster, local }, application, image)
  return { appId: application.id, image }
}

/** The request checked against the function's route, then sent to the application's Service. */
export async function invokeFunction ({ db, config, cluster, local }: RuntimeDeps, appId: string, fnId: string, request: InvokeRequestT): Promise<InvokeResultT> {
  const fn = await getFunction(db, appId, fnId)
  if (fn === null) throw functionNotFound()
  const prepared = prepareInvoke(request, fn.route)
  const application = await findApplication(db, appId)
  if (application === null) throw applicationNotFound()
  if (cluster === null && local != null) {
    const url = await local.hosts.url(application.id, config.invokeTimeoutMs)
    if (url === null) throw notDeployedHere()
    if (url instanceof Error) throw new UnavailableError(`application unreachable: ${url.message}`)
    return invoke({ url, timeoutMs: config.invokeTimeoutMs }, prepared)
  }
  if (cluster === null) throw clusterNotConfigured()
  return invoke({ kube: cluster.kube, serviceName: application.clusterName, timeoutMs: config.invokeTimeoutMs }, prepared)
}

/** The log of the application's newest running pod (else one that ended), from the cluster; its host's output on this machine. */
export async function openApplicationLog (
  { db, cluster, local }: RuntimeDeps,
  appId: string,
  options: { follow: boolean; tailLines: number | undefined; signal: AbortSignal },
): Promise<Readable> {
  const application = await findApplication(db, appId)
  if (application === null) throw applicationNotFound()
  if (cluster === null && local != null) {
    const log = local.hosts.log(application.id, options)
    if (log === null) throw notDeployedHere()
    return log
  }
  if (cluster === null) throw clusterNotConfigured()
  const pods = await listPods(cluster.kube, `${APP_NAME_LABEL}=${application.clusterName}`)
  const pod = pods.find((p) => containerState(p) === 'running') ?? pods.find((p) => containerState(p) === 'terminated')
  if (pod === undefined) throw new NotFoundError('no pod of this application has started')
  return openPodLog(cluster.kube, pod, options)
}

function notDeployedHere (): NotFoundError {
  return new NotFoundError('application is not deployed: it has no successful build yet')
}
