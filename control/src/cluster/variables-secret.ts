// The secret variable values of an application in the cluster: one Secret it owns, named after
// the application, a key per secret variable, which the SpinApp's variables reference
// (valueFrom.secretKeyRef). Not owned by the SpinApp: the values must outlive a SpinApp deleted
// and applied again; the application's label removes it with the application
// (deleteBuildResources' Secret deletecollection). The control plane writes values here and
// reads one back only to keep it when a PATCH says `{"secret": true}`; they never go elsewhere.
import type { V1Secret } from '@kubernetes/client-node'
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node'
import { FIELD_MANAGER } from './applied.js'
import { APPLICATION_LABEL, MANAGED_BY } from './build-jobs.js'
import type { Kube } from './kube.js'
import { clusterError, statusOf } from './kube.js'

export const variablesSecretName = (clusterName: string): string => `${clusterName}-variables`

/** The Secret's data (base64 values by variable name); empty when it does not exist. */
export async function readSecretValues (kube: Kube, clusterName: string): Promise<Record<string, string>> {
  try {
    const secret = await kube.core.readNamespacedSecret({ namespace: kube.namespace, name: variablesSecretName(clusterName) })
    return secret.data ?? {}
  } catch (error) {
    if (statusOf(error) === 404) return {}
    throw clusterError(error, 'get secrets')
  }
}

/** Make the Secret hold exactly `data` (base64 values by name): keys no longer given are removed. */
export async function writeSecretValues (kube: Kube, app: { id: string; clusterName: string }, data: Record<string, string>): Promise<void> {
  const body: V1Secret = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: variablesSecretName(app.clusterName),
      labels: { ...MANAGED_BY, [APPLICATION_LABEL]: app.id, 'app.kubernetes.io/component': 'variables' },
    },
    type: 'Opaque',
    data,
  }
  try {
    await kube.core.patchNamespacedSecret({ namespace: kube.namespace, name: variablesSecretName(app.clusterName), body, fieldManager: FIELD_MANAGER, force: true },
      setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply))
  } catch (error) {
    // The error is mapped from its status alone: nothing of the request (the values) goes on.
    throw clusterError(error, 'patch secrets')
  }
}
