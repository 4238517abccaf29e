// An application's deployment: a SpinApp (core.spinkube.dev/v1alpha1) applied by server-side
// apply, and what spin-operator makes of it (a Deployment and a Service of the same name),
// read back into the API's Deployment object.
import type { V1Deployment, V1Service } from '@kubernetes/client-node'
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node'
import type { Static } from 'typebox'
import type { ClusterRuntimeConfig } from './settings.js'
import { HttpError } from '@session-relay/common/errors'
import type { AppSettings, ResourcesT } from '../model/app-settings.js'
import type { Deployment } from '../model/resources.js'
import { FIELD_MANAGER } from './applied.js'
import { APPLICATION_LABEL, MANAGED_BY } from './build-jobs.js'
import type { Kube } from './kube.js'
import { clusterError, spinAppCrdMissing, statusBody, statusOf } from './kube.js'
import { publicUrlFor } from './public-route.js'
import { variablesSecretName } from './variables-secret.js'

export type DeploymentT = Static<typeof Deployment>

const GROUP = 'core.spinkube.dev'
const VERSION = 'v1alpha1'
const PLURAL = 'spinapps'
export const SPINAPP_API_VERSION = `${GROUP}/${VERSION}`
export const APP_NAME_LABEL = 'core.spinkube.dev/app-name'

type SpinApp = {
  spec?: { image?: string; replicas?: number; enableAutoscaling?: boolean }
  status?: {
    readyReplicas?: number
    conditions?: Array<{ type: string; status: string; reason?: string; message?: string }>
  }
}

/** The pushed image as the nodes reach it: the push repository swapped for the pull one, when one is set. */
function pulledImage(config: ClusterRuntimeConfig, image: string): string {
  const pushed = `${config.imageRepository}/`
  if (config.imagePullRepository === '' || config.imageRepository === '' || !image.startsWith(pushed)) return image
  return `${config.imagePullRepository}/${image.slice(pushed.length)}`
}

/** What the SpinApp is made from: the application, its settings, and the resources in force under the policy. */
export type SpinAppInput = {
  id: string
  clusterName: string
  tenant: string
  settings: AppSettings
  resources: ResourcesT
}

function resourceList(cpu: string | undefined, memory: string | undefined): Record<string, string> | undefined {
  const list = { ...(cpu !== undefined ? { cpu } : {}), ...(memory !== undefined ? { memory } : {}) }
  return Object.keys(list).length === 0 ? undefined : list
}

/** SpinKube's variables: a value, or a key of a Secret (the application's own, or one named by secretRef). */
function spinVariables(app: SpinAppInput): object[] {
  return Object.entries(app.settings.variables)
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([name, variable]) => {
      if ('value' in variable) return { name, value: variable.value }
      if ('secretRef' in variable)
        return { name, valueFrom: { secretKeyRef: { name: variable.secretRef.name, key: variable.secretRef.key } } }
      return { name, valueFrom: { secretKeyRef: { name: variablesSecretName(app.clusterName), key: name } } }
    })
}

function spinApp(
  config: ClusterRuntimeConfig,
  app: SpinAppInput,
  image: string,
  pullSecret: string,
): { apiVersion: string; kind: string; metadata: object; spec: Record<string, unknown> } {
  const limits = resourceList(app.resources.cpuLimit, app.resources.memoryLimit)
  const requests = resourceList(app.resources.cpuRequest, app.resources.memoryRequest)
  const variables = spinVariables(app)
  return {
    apiVersion: SPINAPP_API_VERSION,
    kind: 'SpinApp',
    metadata: { name: app.clusterName, labels: { ...MANAGED_BY, [APPLICATION_LABEL]: app.id } },
    spec: {
      image: pulledImage(config, image),
      executor: 'containerd-shim-spin',
      // spin-operator refuses replicas together with enableAutoscaling: the autoscaler sets them.
      ...(app.settings.autoscaling !== null
        ? { enableAutoscaling: true }
        : { replicas: app.settings.replicas ?? config.replicas }),
      ...(limits !== undefined || requests !== undefined
        ? {
            resources: { ...(limits !== undefined ? { limits } : {}), ...(requests !== undefined ? { requests } : {}) },
          }
        : {}),
      ...(variables.length > 0 ? { variables } : {}),
      ...(pullSecret !== '' ? { imagePullSecrets: [{ name: pullSecret }] } : {}),
    },
  }
}

/**
 * Create or update the SpinApp, its pods pulling with the Secret `pullSecret` ('' : none); the
 * control plane owns its fields (force on conflicts). Resolves with its uid, for the objects it owns.
 */
export async function applySpinApp(
  kube: Kube,
  config: ClusterRuntimeConfig,
  app: SpinAppInput,
  image: string,
  pullSecret: string,
): Promise<{ uid: string; spec: Record<string, unknown> }> {
  const body = spinApp(config, app, image, pullSecret)
  try {
    const applied = (await kube.custom.patchNamespacedCustomObject(
      {
        group: GROUP,
        version: VERSION,
        namespace: kube.namespace,
        plural: PLURAL,
        name: app.clusterName,
        body,
        fieldManager: FIELD_MANAGER,
        force: true,
      },
      setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply),
    )) as { metadata?: { uid?: string } }
    return { uid: applied.metadata?.uid ?? '', spec: body.spec }
  } catch (error) {
    // Apply creates: a 404 can only mean the API server does not know SpinApps.
    if (statusOf(error) === 404) throw spinAppCrdMissing()
    throw clusterError(error, 'patch core.spinkube.dev spinapps')
  }
}

/**
 * Whether the SpinApp is gone or no longer holds the `spec` applied (someone edited it): each
 * field applied must be there as it was; what the API server or the operator added is not ours.
 */
export async function spinAppDrifted(kube: Kube, name: string, spec: Record<string, unknown>): Promise<boolean> {
  const live = await readSpinApp(kube, name)
  return live === null || !holds(live.spec ?? {}, spec)
}

/** `live` has every field of `applied` with the same value (arrays whole, objects field by field). */
function holds(live: unknown, applied: unknown): boolean {
  if (Array.isArray(applied))
    return Array.isArray(live) && live.length === applied.length && applied.every((item, i) => holds(live[i], item))
  if (applied !== null && typeof applied === 'object') {
    if (live === null || typeof live !== 'object' || Array.isArray(live)) return false
    const object = live as Record<string, unknown>
    return Object.entries(applied).every(([key, value]) => holds(object[key], value))
  }
  return live === applied
}

/** Null when the SpinApp does not exist. */
async function readSpinApp(kube: Kube, name: string): Promise<SpinApp | null> {
  try {
    return (await kube.custom.getNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: kube.namespace,
      plural: PLURAL,
      name,
    })) as SpinApp
  } catch (error) {
    if (statusOf(error) === 404 && statusBody(error)?.details?.name !== undefined) return null
    throw clusterError(error, 'get core.spinkube.dev spinapps', { missingCrd: true })
  }
}

async function orNull<T>(read: () => Promise<T>, action: string): Promise<T | null> {
  try {
    return await read()
  } catch (error) {
    if (statusOf(error) === 404) return null
    throw clusterError(error, action)
  }
}

/**
 * The Deployment object of an application whose latest successful build is `image`. When the
 * cluster cannot say more, `message` says why and the counts are 0, so GET application keeps
 * working while the cluster is down.
 */
export async function readDeployment(
  kube: Kube,
  config: ClusterRuntimeConfig,
  app: { name: string; replicas: number },
  image: string,
): Promise<DeploymentT> {
  const base: DeploymentT = {
    image,
    imageSizeBytes: null,
    replicas: app.replicas,
    observedReplicas: 0,
    ready: false,
    namespace: config.namespace,
    serviceName: app.name,
    internalUrl: `http://${app.name}.${config.namespace}.svc.cluster.local`,
    publicUrl: publicUrlFor(config, app.name),
    message: '',
  }
  try {
    const spin = await readSpinApp(kube, app.name)
    if (spin === null) return { ...base, message: 'not deployed: the SpinApp is missing; POST deploy applies it again' }
    const [deployment, service] = await Promise.all([
      orNull<V1Deployment>(
        () => kube.apps.readNamespacedDeployment({ namespace: kube.namespace, name: app.name }),
        'get apps deployments',
      ),
      orNull<V1Service>(
        () => kube.core.readNamespacedService({ namespace: kube.namespace, name: app.name }),
        'get services',
      ),
    ])
    // Autoscaled: as many as the autoscaler asks of the Deployment now.
    const replicas =
      spin.spec?.enableAutoscaling === true ? (deployment?.spec?.replicas ?? 0) : (spin.spec?.replicas ?? base.replicas)
    const readyReplicas = spin.status?.readyReplicas ?? 0
    const port = service?.spec?.ports?.[0]?.port
    const available = spin.status?.conditions?.find((c) => c.type === 'Available')
    const ready = replicas > 0 && readyReplicas >= replicas
    return {
      ...base,
      image: spin.spec?.image ?? image,
      replicas,
      observedReplicas: deployment?.status?.replicas ?? 0,
      ready,
      serviceName: service?.metadata?.name ?? base.serviceName,
      internalUrl: port === undefined || port === 80 ? base.internalUrl : `${base.internalUrl}:${port}`,
      message:
        service === null && deployment === null
          ? 'waiting for the SpinApp operator'
          : ready
            ? `${readyReplicas} of ${replicas} replicas ready`
            : (available?.message ?? `${readyReplicas} of ${replicas} replicas ready`),
    }
  } catch (error) {
    // Only mapped cluster failures (messages written for the caller) end up here.
    if (error instanceof HttpError) return { ...base, message: error.message }
    throw error
  }
}

/** Delete the SpinApp; the operator's Deployment, Service and pods go with it (owner references). */
export async function deleteSpinApp(kube: Kube, name: string): Promise<void> {
  try {
    await kube.custom.deleteNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: kube.namespace,
      plural: PLURAL,
      name,
      propagationPolicy: 'Background',
    })
  } catch (error) {
    if (statusOf(error) === 404 && statusBody(error)?.details?.name !== undefined) return
    // Without the CRD there can be no SpinApp to delete.
    if (statusOf(error) === 404) return
    throw clusterError(error, 'delete core.spinkube.dev spinapps')
  }
}
