// The push credentials of --image-repository for the control plane's own pushes (an image
// re-locked with the application's variable names): the --builder-registry-secret Secret, read
// through the Kubernetes API when a deploy needs it and written to a private directory only for
// as long as the push lasts, so no credential stays on disk or goes into a log or an answer.
// Read by name alone: the Role grants `get` on exactly that Secret (resourceNames).
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { ControlConfig } from '../config.js'
import { UnavailableError } from '../../../common/src/errors.js'
import type { Kube } from './kube.js'
import { clusterError, statusOf } from './kube.js'

const KEY = '.dockerconfigjson'

/**
 * `use` called with a directory holding the Secret's config.json; without a Secret configured,
 * the control plane's own `$DOCKER_CONFIG` (as for reading image sizes: a control plane run
 * outside the cluster), else null.
 */
export async function withRegistryCredentials<T> (kube: Kube, config: ControlConfig, use: (dockerConfigDir: string | null) => Promise<T>): Promise<T> {
  const name = config.builderRegistrySecret
  if (name === '') return use(process.env.DOCKER_CONFIG ?? null)
  const dockerConfig = await readDockerConfig(kube, name)
  // mkdtemp makes it 0700: only this process's user can read what is written in it.
  const dir = await mkdtemp(join(tmpdir(), 'control-registry-'))
  try {
    await writeFile(join(dir, 'config.json'), dockerConfig, { mode: 0o600 })
    return await use(dir)
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}

async function readDockerConfig (kube: Kube, name: string): Promise<Buffer> {
  let data: Record<string, string> | undefined
  try {
    data = (await kube.core.readNamespacedSecret({ namespace: kube.namespace, name })).data
  } catch (error) {
    if (statusOf(error) === 404) throw new UnavailableError(`--builder-registry-secret: no Secret ${name} in namespace ${kube.namespace}`)
    throw clusterError(error, `get secrets ${name}`)
  }
  const encoded = data?.[KEY]
  if (encoded === undefined) throw new UnavailableError(`--builder-registry-secret: the Secret ${name} has no ${KEY} key (create it with --type=kubernetes.io/dockerconfigjson)`)
  return Buffer.from(encoded, 'base64')
}
