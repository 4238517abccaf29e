// A Secret the control plane writes and never reads: a JSON merge patch of its labels and
// data, created when missing. Both the variables' Secret and a tenant's pull Secret are kept
// this way. Errors are mapped from their status alone: nothing of the body (the values) goes on.
import type { V1Secret } from '@kubernetes/client-node'
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node'
import { UnavailableError } from '@session-relay/common/errors'
import type { Kube } from './kube.js'
import { clusterError, statusOf } from './kube.js'

type SecretPatch = {
  metadata: { labels: Record<string, string>; annotations?: Record<string, string> }
  data: Record<string, string | null>
}

/** Merge `patch` into the Secret `name`, or create it as `created` when there is none. */
export async function mergeSecret(kube: Kube, name: string, patch: SecretPatch, created: V1Secret): Promise<void> {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      await kube.core.patchNamespacedSecret(
        { namespace: kube.namespace, name, body: patch },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      )
      return
    } catch (error) {
      if (statusOf(error) !== 404) throw clusterError(error, 'patch secrets')
    }
    try {
      await kube.core.createNamespacedSecret({ namespace: kube.namespace, body: created })
      return
    } catch (error) {
      // Created by a concurrent write in between: patch that one.
      if (statusOf(error) !== 409) throw clusterError(error, 'create secrets')
    }
  }
  throw new UnavailableError(`cluster error: the Secret ${name} changed under two writes in a row; try again`)
}
