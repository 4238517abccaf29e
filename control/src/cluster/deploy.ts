// An application deployed in the cluster: its SpinApp, then what the SpinApp owns beside what
// spin-operator makes (the autoscaler, the public route), so they go when it goes. Resolves
// with the SpinApp's spec as applied: what a resync compares the live one with.
import type { ClusterRuntimeConfig } from './settings.js'
import { syncAutoscaler } from './autoscaler.js'
import type { Kube } from './kube.js'
import type { TenantPullSecrets } from './pull-secret.js'
import { applyPublicRoute } from './public-route.js'
import type { SpinAppInput } from './spinapps.js'
import { applySpinApp, SPINAPP_API_VERSION } from './spinapps.js'

export async function deployToCluster(
  kube: Kube,
  config: ClusterRuntimeConfig,
  app: SpinAppInput,
  image: string,
  pullSecrets: TenantPullSecrets | null,
): Promise<{ spec: Record<string, unknown> }> {
  // With the token server, the tenant's own pull credential, fresh; else the one of --image-pull-secret.
  const pullSecret = pullSecrets !== null ? await pullSecrets.write(app.tenant) : config.imagePullSecret
  const { uid, spec } = await applySpinApp(kube, config, app, image, pullSecret)
  const owner = { apiVersion: SPINAPP_API_VERSION, kind: 'SpinApp', name: app.clusterName, uid }
  await syncAutoscaler(kube, app, app.settings.autoscaling, owner)
  await applyPublicRoute(kube, config, app, owner)
  return { spec }
}
