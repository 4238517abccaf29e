// Deploying an application's newest image with its settings: in the cluster, its SpinApp (and
// what the SpinApp owns) with the resources in force under the platform's policy as it is now,
// so a policy tightened since the application was configured holds from this deploy on; on
// this machine, its host process.
import { deployToCluster } from '../cluster/deploy.js'
import type { Kube } from '../cluster/kube.js'
import type { ControlConfig } from '../config.js'
import type { LocalRuntime } from '../local/local.js'
import type { StoredApplication } from '../store/applications.js'
import { resourcesInForce } from './policy.js'

export async function deployInCluster (kube: Kube, config: ControlConfig, application: StoredApplication, image: string): Promise<void> {
  await deployToCluster(kube, config, { ...application, resources: resourcesInForce(config, application.settings.resources) }, image)
}

export async function deployApplication (
  { config, cluster, local }: { config: ControlConfig; cluster: { kube: Kube } | null; local?: LocalRuntime | null | undefined },
  application: StoredApplication,
  image: string,
): Promise<void> {
  if (cluster !== null) await deployInCluster(cluster.kube, config, application, image)
  else await local?.deploy(application, image)
}
