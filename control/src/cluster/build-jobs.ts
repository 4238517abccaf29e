// A build's Kubernetes side: the Secret holding the packed sources and the Job that runs the
// language's builder image on it (domain/builds.ts packs the archive). The builder contract
// (docs/control-plane.md, builders/README.md): the archive is mounted read-only at
// /workspace/source/source.tar.gz; the builder builds every function, pushes the Spin artifact
// to $IMAGE_REF (with the credentials of $DOCKER_CONFIG when a registry Secret is configured)
// and writes the digest-pinned reference to /dev/termination-log; on failure the reason.
import type { V1Job, V1Secret } from '@kubernetes/client-node'
import type { ControlConfig } from '../config.js'
import { TooLargeError } from '../errors.js'
import type { LanguageT } from '../model/resources.js'
import type { Kube } from './kube.js'
import { clusterError } from './kube.js'

export const MANAGED_BY = { 'app.kubernetes.io/managed-by': 'platform-control' }
export const APPLICATION_LABEL = 'platform.wasmkube.dev/application'
export const BUILD_LABEL = 'platform.wasmkube.dev/build'
export const BUILD_CONTAINER = 'build'
const SOURCE_ARCHIVE = 'source.tar.gz'
// Where the registry Secret's config.json is mounted: the builder's DOCKER_CONFIG.
const REGISTRY_CONFIG_DIR = '/var/run/secrets/registry'

// A Secret holds at most 1 MiB; the rest of the object needs a little of it.
export const MAX_BUILD_ARCHIVE_BYTES = 1024 * 1024 - 16 * 1024

/** Labels of everything a build creates; the selector of all builds is MANAGED_BY plus the build label's presence. */
function buildLabels (appId: string, buildId: string): Record<string, string> {
  return { ...MANAGED_BY, 'app.kubernetes.io/component': 'build', [APPLICATION_LABEL]: appId, [BUILD_LABEL]: buildId }
}

const buildJobName = (buildId: string): string => `build-${buildId}`

/** `clusterName` is unique across tenants (store/applications.ts); `name` only within one. */
export type BuildApplication = { id: string; name: string; clusterName: string; language: LanguageT }

// What each language's component builds with, from the function's directory; every command
// leaves component.wasm there, which spin.toml names as the component's source.
const BUILD_COMMANDS: Record<LanguageT, string> = {
  // A wasip1 command module for Spin's WAGI executor (the builder's locked app names it).
  go: 'GOOS=wasip1 GOARCH=wasm go build -o component.wasm .',
  // Spin componentizes the wasip1 module at load; the builder does it before pushing.
  rust: 'cargo build --target wasm32-wasip1 --release && cp target/wasm32-wasip1/release/*.wasm component.wasm',
  js: 'npm install && npm run build',
  ts: 'npm install && npm run build',
}

/** The Spin manifest of an application: one component per function, on the function's route. */
export function spinManifest (app: BuildApplication, functions: Array<{ name: string; route: string }>): string {
  const lines = ['spin_manifest_version = 2', '', '[application]', `name = ${toml(app.name)}`, 'version = "0.1.0"', '']
  for (const fn of functions) {
    lines.push('[[trigger.http]]', `route = ${toml(fn.route)}`, `component = ${toml(fn.name)}`, '')
  }
  for (const fn of functions) {
    lines.push(`[component.${fn.name}]`, `source = ${toml(`functions/${fn.name}/component.wasm`)}`, 'allowed_outbound_hosts = []',
      `[component.${fn.name}.build]`, `command = ${toml(BUILD_COMMANDS[app.language])}`, `workdir = ${toml(`functions/${fn.name}`)}`, '')
  }
  return lines.join('\n')
}

// JSON strings are valid TOML basic strings for everything a route or name can hold.
const toml = (text: string): string => JSON.stringify(text)

function imageRefFor (config: ControlConfig, app: BuildApplication, buildId: string): string {
  return `${config.imageRepository}/${app.clusterName}:${buildId}`
}

function buildJob (config: ControlConfig, app: BuildApplication, buildId: string): V1Job {
  const labels = buildLabels(app.id, buildId)
  const name = buildJobName(buildId)
  const resources = { cpu: config.buildCpu, memory: config.buildMemory }
  const withRegistry = config.builderRegistrySecret !== ''
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
          containers: [{
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
            ],
            resources: { requests: resources, limits: resources },
            // The builder's last words when it writes none itself: a failed build then still says why.
            terminationMessagePolicy: 'FallbackToLogsOnError',
          }],
          volumes: [
            { name: 'source', secret: { secretName: name } },
            ...(withRegistry ? [{ name: 'registry', secret: { secretName: config.builderRegistrySecret, items: [{ key: '.dockerconfigjson', path: 'config.json' }] } }] : []),
          ],
        },
      },
    },
  }
}

/**
 * Create the build's Job, then its source Secret owned by the Job (so the Job's TTL removes
 * both; the pod waits for the Secret to mount). On failure nothing is left behind and the
 * mapped error is thrown.
 */
export async function createBuildJob (kube: Kube, config: ControlConfig, app: BuildApplication, buildId: string, archive: Buffer): Promise<void> {
  if (archive.length > MAX_BUILD_ARCHIVE_BYTES) {
    throw new TooLargeError(`source too large to build: the gzipped sources take ${archive.length} bytes, at most ${MAX_BUILD_ARCHIVE_BYTES} fit in a Secret`)
  }
  let job: V1Job
  try {
    job = await kube.batch.createNamespacedJob({ namespace: kube.namespace, body: buildJob(config, app, buildId) })
  } catch (error) {
    throw clusterError(error, 'create batch jobs')
  }
  const secret: V1Secret = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: buildJobName(buildId),
      labels: buildLabels(app.id, buildId),
      ownerReferences: [{ apiVersion: 'batch/v1', kind: 'Job', name: job.metadata?.name ?? buildJobName(buildId), uid: job.metadata?.uid ?? '' }],
    },
    type: 'Opaque',
    data: { [SOURCE_ARCHIVE]: archive.toString('base64') },
  }
  try {
    await kube.core.createNamespacedSecret({ namespace: kube.namespace, body: secret })
  } catch (error) {
    await deleteBuildResources(kube, `${BUILD_LABEL}=${buildId}`).catch(() => {})
    throw clusterError(error, 'create secrets')
  }
}

/** Delete the Jobs (with their pods) and Secrets matching `selector`. */
export async function deleteBuildResources (kube: Kube, selector: string): Promise<void> {
  try {
    await kube.batch.deleteCollectionNamespacedJob({ namespace: kube.namespace, labelSelector: selector, propagationPolicy: 'Background' })
  } catch (error) {
    throw clusterError(error, 'deletecollection batch jobs')
  }
  try {
    await kube.core.deleteCollectionNamespacedSecret({ namespace: kube.namespace, labelSelector: selector })
  } catch (error) {
    throw clusterError(error, 'deletecollection secrets')
  }
}
