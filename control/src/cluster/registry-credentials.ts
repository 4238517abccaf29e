// Registry credentials in the cluster. When the control plane is the registry's token server
// (--registry-token-key), a build's Job gets a credential of its own, good for its application's
// repository while the build runs, and the control plane signs itself one per push. Otherwise
// the push credentials of --image-repository are the --builder-registry-secret Secret (mounted
// into every build), read through the Kubernetes API when a deploy needs it and written to a
// private directory only for as long as the push lasts, so no credential stays on disk or goes
// into a log or an answer. Read by name alone: the Role grants `get` on exactly that Secret.
import { parseRef } from '@session-relay/spin/ref'
import type { ClusterRuntimeConfig } from './settings.js'
import { UnavailableError } from '@session-relay/common/errors'
import { dockerConfigJson, mintCredential } from '../registry/credentials.js'
import { withDockerConfig, withOwnAccess } from '../registry/own-access.js'
import { registryHosts, repositoryOf } from '../registry/repositories.js'
import type { RegistrySigner } from '../registry/signing-key.js'
import type { Kube } from './kube.js'
import { clusterError, statusOf } from './kube.js'

// Past the Job's own deadline, as a backstop: the token server stops honouring it as soon as the
// build has finished.
const BUILD_CREDENTIAL_GRACE_MS = 10 * 60_000

/** The config.json a build Job gets with the token server: null without one (the shared Secret's, if any). */
export async function buildRegistryConfig(
  config: ClusterRuntimeConfig,
  signer: RegistrySigner | null,
  clusterName: string,
  buildId: string,
): Promise<string | null> {
  if (signer === null) return null
  const credential = await mintCredential(
    signer,
    { kind: 'build', build: buildId, repository: repositoryOf(config, clusterName) },
    config.buildTimeoutMs + BUILD_CREDENTIAL_GRACE_MS,
  )
  return dockerConfigJson(registryHosts(config), credential)
}

const KEY = '.dockerconfigjson'

/**
 * `use` called with a directory holding a config.json that may push to `image`'s repository:
 * one signed for it by the token server, else the Secret's; without either, the control plane's
 * own `--docker-config` (as for reading image sizes: a control plane run outside the cluster),
 * else null.
 */
export async function withRegistryCredentials<T>(
  kube: Kube,
  config: ClusterRuntimeConfig,
  signer: RegistrySigner | null,
  image: string,
  use: (dockerConfigDir: string | null) => Promise<T>,
): Promise<T> {
  const ref = parseRef(image)
  if (signer !== null && ref.kind === 'registry') return withOwnAccess(signer, ref, ['pull', 'push'], use)
  const name = config.builderRegistrySecret
  if (name === '') return use(config.dockerConfig)
  return withDockerConfig((await readDockerConfig(kube, name)).toString('utf8'), use)
}

async function readDockerConfig(kube: Kube, name: string): Promise<Buffer> {
  let data: Record<string, string> | undefined
  try {
    data = (await kube.core.readNamespacedSecret({ namespace: kube.namespace, name })).data
  } catch (error) {
    if (statusOf(error) === 404)
      throw new UnavailableError(`--builder-registry-secret: no Secret ${name} in namespace ${kube.namespace}`)
    throw clusterError(error, `get secrets ${name}`)
  }
  const encoded = data?.[KEY]
  if (encoded === undefined)
    throw new UnavailableError(
      `--builder-registry-secret: the Secret ${name} has no ${KEY} key (create it with --type=kubernetes.io/dockerconfigjson)`,
    )
  return Buffer.from(encoded, 'base64')
}
