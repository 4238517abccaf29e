// The secret variable values of an application in the cluster: one Secret it owns, named after
// the application, a key per secret variable, which the SpinApp's variables reference
// (valueFrom.secretKeyRef). Not owned by the SpinApp: the values must outlive a SpinApp deleted
// and applied again; the application's label removes it with the application
// (deleteBuildResources' Secret deletecollection). The control plane only ever writes it: a
// merge patch sets the new values and removes the keys no longer wanted, leaving the kept ones
// as they are, so it never needs to read a Secret (the Role grants get on the registry
// credentials' Secret alone).
import type { V1Secret } from '@kubernetes/client-node'
import { APPLICATION_LABEL, MANAGED_BY } from './build-jobs.js'
import type { Kube } from './kube.js'
import { mergeSecret } from './merge-secret.js'

export const variablesSecretName = (clusterName: string): string => `${clusterName}-variables`

/**
 * Set `values` (base64 by variable name), remove `removed`, keep every other key. Created when
 * missing. Errors are mapped from their status alone: nothing of the request (the values) goes on.
 */
export async function writeSecretValues(
  kube: Kube,
  app: { id: string; clusterName: string },
  values: Record<string, string>,
  removed: string[],
): Promise<void> {
  const name = variablesSecretName(app.clusterName)
  const labels = { ...MANAGED_BY, [APPLICATION_LABEL]: app.id, 'app.kubernetes.io/component': 'variables' }
  const data: Record<string, string | null> = { ...Object.fromEntries(removed.map((key) => [key, null])), ...values }
  const secret: V1Secret = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, labels },
    type: 'Opaque',
    data: values,
  }
  await mergeSecret(kube, name, { metadata: { labels }, data }, secret)
}
