// A build's Kubernetes side: the Secret holding the packed sources and the Job that runs the
// language's builder image on it (domain/builds.ts packs the archive). The builder contract
// (docs/control-plane.md, builders/README.md): the archive is mounted read-only at
// /workspace/source/source.tar.gz; the builder builds every function, pushes the Spin artifact
// to $IMAGE_REF (with the credentials of $DOCKER_CONFIG when a registry Secret is configured)
// and writes the digest-pinned reference to /dev/termination-log; on failure the reason. The pod
// is confined as build-pod.ts says: non-root, read-only root with a writable /tmp, capped.
import type { V1Job, V1Secret, V1Volume } from '@kubernetes/client-node'
import type { ClusterRuntimeConfig } from './settings.js'
import { TooLargeError } from '@session-relay/common/errors'
import type { BuildApplication } from '../runtime/runtime.js'
import { buildContainerLimits, buildPodSecurityContext, buildScratchMount, buildScratchVolume } from './build-pod.js'
import type { Kube } from './kube.js'
import { clusterError } from './kube.js'

export const MANAGED_BY = { 'app.kubernetes.io/managed-by': 'platform-control' }
export const APPLICATION_LABEL = 'platform.wasmkube.dev/application'
export const BUILD_LABEL = 'platform.wasmkube.dev/build'
export const BUILD_CONTAINER = 'build'
const SOURCE_ARCHIVE = 'source.tar.gz'
// Where the registry Secret's config.json is mounted: the builder's DOCKER_CONFIG.
const REGISTRY_CONFIG_DIR = '/var/run/secrets/registry'
// The key of the build's own Secret that holds its registry credential, when it has one.
const REGISTRY_CONFIG_KEY = 'registry-config.json'

// A Secret holds at most 1 MiB; the rest of the object needs a little of it.
const MAX_BUILD_ARCHIVE_BYTES = 1024 * 1024 - 16 * 1024

/** 413 for sources too large for the Secret that carries them to the build. */
export function refuseLargeArchive(bytes: number): void {
  if (bytes > MAX_BUILD_ARCHIVE_BYTES) {
    throw new TooLargeError(
      `source too large to build: the gzipped sources take ${bytes} bytes, at most ${MAX_BUILD_ARCHIVE_BYTES} fit in a Secret`,
    )
  }
}

/** The labels every build's pod carries: deploy/'s NetworkPolicy for build pods selects them. */
export const BUILD_POD_LABELS = { ...MANAGED_BY, 'app.kubernetes.io/component': 'build' }

/** Labels of everything a build creates; the selector of all builds is MANAGED_BY plus the build label's presence. */
function buildLabels(appId: string, buildId: string): Record<string, string> {
  return { ...BUILD_POD_LABELS, [APPLICATION_LABEL]: appId, [BUILD_LABEL]: buildId }
}

const buildJobName = (buildId: string): string => `build-${buildId}`

function imageRefFor(config: ClusterRuntimeConfig, app: BuildApplication, buildId: string): string {
  return `${config.imageRepository}/${app.clusterName}:${buildId}`
}

/** Where the build's config.json comes from: its own Secret (the token server's credential), the shared Secret, or nowhere. */
type RegistryConfigSource = 'own' | 'shared' | 'none'

function registryVolume(config: ClusterRuntimeConfig, source: RegistryConfigSource, name: string): V1Volume[] {
  switch (source) {
    case 'own':
      return [
        { name: 'registry', secret: { secretName: name, items: [{ key: REGISTRY_CONFIG_KEY, path: 'config.json' }] } },
      ]
    case 'shared':
      return [
        {
          name: 'registry',
          secret: {
            secretName: config.builderRegistrySecret,
            items: [{ key: '.dockerconfigjson', path: 'config.json' }],
          },
        },
      ]
    case 'none':
      return []
  }
}

function buildJob(
  config: ClusterRuntimeConfig,
  app: BuildApplication,
  buildId: string,
  registry: RegistryConfigSource,
): V1Job {
  const labels = buildLabels(app.id, buildId)
  const name = buildJobName(buildId)
  const withRegistry = registry !== 'none'
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name, labels },
    spec: {
      backoffLimit: 0,
      activeDeadlineSeconds: Math.round(config.buildTimeoutMs / 1000),
      ttlSecondsAfterFinished: Math.round(config.buildTtlMs / 1000),
      template: {
        metadata: { labels },
        spec: {
          restartPolicy: 'Never',
          automountServiceAccountToken: false,
          enableServiceLinks: false,
          securityContext: buildPodSecurityContext(),
          containers: [
            {
              name: BUILD_CONTAINER,
              image: config.builderImages[app.language],
              env: [
                { name: 'IMAGE_REF', value: imageRefFor(config, app, buildId) },
                { name: 'APPLICATION', value: app.name },
                { name: 'LANGUAGE', value: app.language },
                { name: 'BUILD_ID', value: buildId },
                { name: 'SOURCE_ARCHIVE', value: `/workspace/source/${SOURCE_ARCHIVE}` },
                ...(withRegistry ? [{ name: 'DOCKER_CONFIG', value: REGISTRY_CONFIG_DIR }] : []),
                ...(config.registryInsecure ? [{ name: 'INSECURE_REGISTRY', value: 'true' }] : []),
              ],
              volumeMounts: [
                { name: 'source', mountPath: '/workspace/source', readOnly: true },
                ...(withRegistry ? [{ name: 'registry', mountPath: REGISTRY_CONFIG_DIR, readOnly: true }] : []),
                buildScratchMount,
              ],
              ...buildContainerLimits(config),
              // The builder's last words when it writes none itself: a failed build then still says why.
              terminationMessagePolicy: 'FallbackToLogsOnError',
            },
          ],
          volumes: [
            { name: 'source', secret: { secretName: name, items: [{ key: SOURCE_ARCHIVE, path: SOURCE_ARCHIVE }] } },
            ...registryVolume(config, registry, name),
            buildScratchVolume(config),
          ],
        },
      },
    },
  }
}

/**
 * Create the build's Job, then its Secret owned by the Job (so the Job's TTL removes both; the
 * pod waits for the Secret to mount): the source archive and, with the token server, the
 * build's own registry config.json. On failure nothing is left behind and the mapped error is
 * thrown.
 */
export async function createBuildJob(
  kube: Kube,
  config: ClusterRuntimeConfig,
  app: BuildApplication,
  buildId: string,
  archive: Buffer,
  registryConfig: string | null,
): Promise<void> {
  refuseLargeArchive(archive.length)
  const registry: RegistryConfigSource =
    registryConfig !== null ? 'own' : config.builderRegistrySecret !== '' ? 'shared' : 'none'
  let job: V1Job
  try {
    job = await kube.batch.createNamespacedJob({
      namespace: kube.namespace,
      body: buildJob(config, app, buildId, registry),
    })
  } catch (error) {
    throw clusterError(error, 'create batch jobs')
  }
  const secret: V1Secret = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: buildJobName(buildId),
      labels: buildLabels(app.id, buildId),
      ownerReferences: [
        {
          apiVersion: 'batch/v1',
          kind: 'Job',
          name: job.metadata?.name ?? buildJobName(buildId),
          uid: job.metadata?.uid ?? '',
        },
      ],
    },
    type: 'Opaque',
    data: {
      [SOURCE_ARCHIVE]: archive.toString('base64'),
      ...(registryConfig !== null ? { [REGISTRY_CONFIG_KEY]: Buffer.from(registryConfig).toString('base64') } : {}),
    },
  }
  try {
    await kube.core.createNamespacedSecret({ namespace: kube.namespace, body: secret })
  } catch (error) {
    await deleteBuildResources(kube, `${BUILD_LABEL}=${buildId}`).catch(() => {})
    throw clusterError(error, 'create secrets')
  }
}

/** Delete the Jobs (with their pods) and Secrets matching `selector`. */
export async function deleteBuildResources(kube: Kube, selector: string): Promise<void> {
  try {
    await kube.batch.deleteCollectionNamespacedJob({
      namespace: kube.namespace,
      labelSelector: selector,
      propagationPolicy: 'Background',
    })
  } catch (error) {
    throw clusterError(error, 'deletecollection batch jobs')
  }
  try {
    await kube.core.deleteCollectionNamespacedSecret({ namespace: kube.namespace, labelSelector: selector })
  } catch (error) {
    throw clusterError(error, 'deletecollection secrets')
  }
}
