// Where artifacts go and come from: a registry or an image-layout directory, behind one shape.
import type { Credentials } from './auth.js'
import { dockerCredentials } from './auth.js'
import { layoutStore } from './layout.js'
import type { ArtifactRef } from './ref.js'
import { registryClient } from './registry.js'

export type ArtifactStore = {
  hasBlob: (digest: string) => Promise<boolean>
  pushBlob: (bytes: Uint8Array, digest: string) => Promise<void>
  pushManifest: (bytes: Uint8Array, mediaType: string, reference: string) => Promise<string>
  getManifest: (reference: string) => Promise<{ bytes: Buffer; digest: string; mediaType: string }>
  getBlob: (digest: string, maxBytes: number) => Promise<Buffer>
}

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
