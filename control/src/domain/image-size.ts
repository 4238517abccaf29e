// How big a built application is: its manifest's config plus layers, as pushed (the bytes a
// node pulls, before any compression the registry might add on the wire). Read from wherever
// the build put it: the registry (with a credential of the control plane's own when it is the
// registry's token server, else those of $DOCKER_CONFIG, if the process has any) or the OCI
// layout on this machine. Null when the manifest cannot be read or makes no sense.
import type { ArtifactRef } from '@session-relay/spin/ref'
import { parseRef } from '@session-relay/spin/ref'
import { openStore } from '@session-relay/spin/store'
import type { RegistrySettings } from '../registry/settings.js'
import { withOwnAccess } from '../registry/own-access.js'
import type { RegistrySigner } from '../registry/signing-key.js'

const MEASURE_TIMEOUT_MS = 10_000

type Descriptor = { size?: unknown }

type MeasureConfig = Pick<RegistrySettings, 'registryInsecure' | 'dockerConfig'>

export async function measureImage(
  config: MeasureConfig,
  imageRef: string,
  signer: RegistrySigner | null = null,
): Promise<number | null> {
  const ref = parseRef(imageRef)
  if (signer !== null && ref.kind === 'registry') {
    return withOwnAccess(signer, ref, ['pull'], (dir) => manifestSize(config, ref, dir))
  }
  return manifestSize(config, ref, config.dockerConfig)
}

async function manifestSize(
  config: MeasureConfig,
  ref: ArtifactRef,
  dockerConfigDir: string | null,
): Promise<number | null> {
  const store = await openStore(ref, {
    dockerConfigDir,
    insecure: config.registryInsecure,
    timeoutMs: MEASURE_TIMEOUT_MS,
  })
  const { bytes } = await store.getManifest(ref.digest ?? ref.tag ?? 'latest')
  const manifest = JSON.parse(bytes.toString('utf8')) as { config?: Descriptor; layers?: Descriptor[] }
  const sizes = [manifest.config, ...(manifest.layers ?? [])].map((descriptor) => descriptor?.size)
  if (
    manifest.config === undefined ||
    !sizes.every((size): size is number => Number.isSafeInteger(size) && (size as number) >= 0)
  )
    return null
  const total = sizes.reduce((sum, size) => sum + size, 0)
  return Number.isSafeInteger(total) ? total : null
}
