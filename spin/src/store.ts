// Where artifacts go and come from: a registry or an image-layout directory, behind one shape.
import type { Credentials } from './auth.js'
import { dockerCredentials } from './auth.js'
import { layoutStore } from './layout.js'
import type { ArtifactRef } from './ref.js'
import { registryClient } from './registry.js'

// The shape lives apart so that its two implementations need not import this module.
export type { ArtifactStore } from './artifact-store.js'
import type { ArtifactStore } from './artifact-store.js'

export type StoreOptions = {
  /** A directory holding a Docker config.json; null for none. */
  dockerConfigDir: string | null
  /** Plain http to a registry that is not on loopback. */
  insecure?: boolean
  timeoutMs?: number
}

export async function openStore(ref: ArtifactRef, options: StoreOptions): Promise<ArtifactStore> {
  if (ref.kind === 'oci-layout') return layoutStore(ref.dir)
  let credentials: Credentials | null = null
  if (options.dockerConfigDir !== null) credentials = await dockerCredentials(options.dockerConfigDir, ref.registry)
  return registryClient(ref, {
    credentials,
    insecure: options.insecure ?? false,
    ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
  })
}
