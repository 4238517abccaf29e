// Objects the control plane owns beside the SpinApp (its HorizontalPodAutoscaler, its public
// route), applied server-side under the same field manager as the SpinApp, and deleted by name.
// The custom-objects client serves any API group by path, built-in ones too.
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node'
import { UnavailableError } from '@session-relay/common/errors'
import type { Kube } from './kube.js'
import { clusterError, statusBody, statusOf } from './kube.js'

export const FIELD_MANAGER = 'platform-control'

export type ObjectType = {
  group: string
  version: string
  plural: string
  /** What to do when the cluster does not serve the type. */ missing: string
}

/** Create or update; the control plane owns the fields it sets (force on conflicts). */
export async function applyObject(kube: Kube, type: ObjectType, name: string, body: object): Promise<void> {
  try {
    await kube.custom.patchNamespacedCustomObject(
      {
        group: type.group,
        version: type.version,
        namespace: kube.namespace,
        plural: type.plural,
        name,
        body,
        fieldManager: FIELD_MANAGER,
        force: true,
      },
      setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply),
    )
  } catch (error) {
    // Apply creates: a 404 without an object's name is the API server not serving the type.
    if (statusOf(error) === 404 && statusBody(error)?.details?.name === undefined) {
      throw new UnavailableError(
        `the cluster does not serve ${type.group}/${type.version} ${type.plural}: ${type.missing}`,
      )
    }
    throw clusterError(error, `patch ${type.group} ${type.plural}`)
  }
}

/** Delete by name; gone already (or its type unknown to the cluster) is fine. */
export async function deleteObject(kube: Kube, type: ObjectType, name: string): Promise<void> {
  try {
    await kube.custom.deleteNamespacedCustomObject({
      group: type.group,
      version: type.version,
      namespace: kube.namespace,
      plural: type.plural,
      name,
      propagationPolicy: 'Background',
    })
  } catch (error) {
    if (statusOf(error) === 404) return
    throw clusterError(error, `delete ${type.group} ${type.plural}`)
  }
}

/** An owner reference to `owner`: what carries it goes when the owner is deleted. */
export function ownedBy(owner: {
  apiVersion: string
  kind: string
  name: string
  uid: string
}): Array<Record<string, string>> {
  return [{ apiVersion: owner.apiVersion, kind: owner.kind, name: owner.name, uid: owner.uid }]
}
