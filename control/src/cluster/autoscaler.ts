// An application's HorizontalPodAutoscaler (autoscaling/v2): it scales the Deployment
// spin-operator makes for the SpinApp (the SpinApp then has enableAutoscaling and no replicas,
// as spin-operator's admission webhook requires), on the pods' CPU use measured against their
// CPU request. Owned by the SpinApp, so it goes when the SpinApp does.
import type { AutoscalingT } from '../model/app-settings.js'
import type { ObjectType } from './applied.js'
import { applyObject, deleteObject, ownedBy } from './applied.js'
import { APPLICATION_LABEL, MANAGED_BY } from './build-jobs.js'
import type { Kube } from './kube.js'

const HPA: ObjectType = {
  group: 'autoscaling',
  version: 'v2',
  plural: 'horizontalpodautoscalers',
  missing: 'autoscaling needs Kubernetes 1.23 or later',
}

type Owner = { apiVersion: string; kind: string; name: string; uid: string }

function autoscaler(app: { id: string; clusterName: string }, autoscaling: AutoscalingT, owner: Owner): object {
  return {
    apiVersion: 'autoscaling/v2',
    kind: 'HorizontalPodAutoscaler',
    metadata: {
      name: app.clusterName,
      labels: { ...MANAGED_BY, [APPLICATION_LABEL]: app.id },
      ownerReferences: ownedBy(owner),
    },
    spec: {
      scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: app.clusterName },
      minReplicas: autoscaling.minReplicas,
      maxReplicas: autoscaling.maxReplicas,
      metrics: [
        {
          type: 'Resource',
          resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: autoscaling.targetCpuPercent } },
        },
      ],
    },
  }
}

/** The autoscaler as the settings say: applied, or deleted when there is none. */
export async function syncAutoscaler(
  kube: Kube,
  app: { id: string; clusterName: string },
  autoscaling: AutoscalingT | null,
  owner: Owner,
): Promise<void> {
  if (autoscaling === null) await deleteObject(kube, HPA, app.clusterName)
  else await applyObject(kube, HPA, app.clusterName, autoscaler(app, autoscaling, owner))
}
