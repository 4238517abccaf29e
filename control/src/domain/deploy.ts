// Deploying an application's newest image with its settings: in the cluster, its SpinApp (and
// what the SpinApp owns) with the resources in force under the platform's policy as it is now,
// so a policy tightened since the application was configured holds from this deploy on, and the
// image re-locked to declare the variables' names; on this machine, its host process (which
// re-locks the same way). The one path of a deploy after a build, POST deploy and PATCH.
import { deployToCluster } from '../cluster/deploy.js'
import type { Kube } from '../cluster/kube.js'
import type { Relock } from '../cluster/relocked-image.js'
import { relockedImage } from '../cluster/relocked-image.js'
import type { ControlConfig } from '../config.js'
import type { LocalRuntime } from '../local/local.js'
import type { StoredApplication } from '../store/applications.js'
import { resourcesInForce } from './policy.js'

export async function deployApplication (
  { config, cluster, local }: { config: ControlConfig; cluster: { kube: Kube; relock?: Relock | undefined; notApplied?: Map<string, string> | undefined } | null; local?: LocalRuntime | null | undefined },
  application: StoredApplication,
  image: string,
): Promise<void> {
  if (cluster === null) {
    await local?.deploy(application, image)
    return
  }
  const running = await relockedImage(cluster.kube, config, image, application.settings, cluster.relock)
  await deployToCluster(cluster.kube, config, { ...application, resources: resourcesInForce(config, application.settings.resources) }, running)
  cluster.notApplied?.delete(application.id)
}
