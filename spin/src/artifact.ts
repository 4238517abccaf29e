// A Spin application as an OCI artifact: assembling and pushing it the way `spin registry push`
// does (spin crates/oci/src/client.rs, `push_locked_app`), and pulling it back with the checks
// containerd-shim-spin relies on (the media types, the lockedAppDigest label naming the lock
// layer, every component's source a wasm layer of the same manifest).
import { isDigest, sha256Digest, verifyDigest } from './digest.js'
import type { Descriptor, ImageConfig, ImageManifest, LockedApp } from './format.js'
import {
  CONFIG_MEDIA_TYPE,
  DATA_LAYER_MEDIA_TYPE,
  LOCKED_APP_DIGEST_LABEL,
  LOCKED_APP_MEDIA_TYPE,
  MANIFEST_MEDIA_TYPE,
  WASM_CONTENT_TYPE,
  WASM_LAYER_MEDIA_TYPE,
} from './format.js'
import type { ArtifactStore } from './artifact-store.js'

export type SpinApplication = {
  /** The locked app whose components' sources are still local (`source` unset or a file URL). */
  lockedApp: LockedApp
  /** Each component's wasm, by component id. */
  wasm: Map<string, Uint8Array>
  annotations?: Record<string, string>
}

export type PushResult = { digest: string; manifest: ImageManifest; pushedBlobs: number }

/** The blobs and manifest of the artifact, without storing them anywhere. */
function assembleArtifact(app: SpinApplication): {
  blobs: Map<string, Uint8Array>
  manifest: ImageManifest
  manifestBytes: Buffer
} {
  const blobs = new Map<string, Uint8Array>()
  const layers: Descriptor[] = []
  const components = app.lockedApp.components.map((component) => {
    const bytes = app.wasm.get(component.id)
    if (bytes === undefined) throw new Error(`no wasm for component ${component.id}`)
    const digest = sha256Digest(bytes)
    // Components built from the same bytes share one layer, as Spin deduplicates them.
    if (!blobs.has(digest)) {
      blobs.set(digest, bytes)
      layers.push({ mediaType: WASM_LAYER_MEDIA_TYPE, digest, size: bytes.length })
    }
    return { ...component, source: { content_type: WASM_CONTENT_TYPE, digest } }
  })
  const metadata = { ...(app.lockedApp.metadata ?? {}) }
  delete metadata.origin // Spin drops the local origin before pushing.
  const lockedApp: LockedApp = { ...app.lockedApp, metadata, components }
  const lockBytes = Buffer.from(JSON.stringify(lockedApp))
  const lockDigest = sha256Digest(lockBytes)
  blobs.set(lockDigest, lockBytes)
  layers.push({ mediaType: LOCKED_APP_MEDIA_TYPE, digest: lockDigest, size: lockBytes.length })
  const config: ImageConfig = {
    architecture: 'wasm',
    os: 'wasip1',
    config: { Labels: { [LOCKED_APP_DIGEST_LABEL]: lockDigest } },
    rootfs: { type: 'layers', diff_ids: [] },
  }
  const configBytes = Buffer.from(JSON.stringify(config))
  const configDigest = sha256Digest(configBytes)
  blobs.set(configDigest, configBytes)
  const manifest: ImageManifest = {
    schemaVersion: 2,
    mediaType: MANIFEST_MEDIA_TYPE,
    config: { mediaType: CONFIG_MEDIA_TYPE, digest: configDigest, size: configBytes.length },
    layers,
  }
  if (app.annotations !== undefined && Object.keys(app.annotations).length > 0) manifest.annotations = app.annotations
  return { blobs, manifest, manifestBytes: Buffer.from(JSON.stringify(manifest)) }
}

/** Push the application's blobs (skipping those the store has) and its manifest under `tag`. */
export async function pushSpinApp(store: ArtifactStore, tag: string, app: SpinApplication): Promise<PushResult> {
  const { blobs, manifest, manifestBytes } = assembleArtifact(app)
  let pushedBlobs = 0
  for (const [digest, bytes] of blobs) {
    if (await store.hasBlob(digest)) continue
    await store.pushBlob(bytes, digest)
    pushedBlobs++
  }
  const digest = await store.pushManifest(manifestBytes, MANIFEST_MEDIA_TYPE, tag)
  return { digest, manifest, pushedBlobs }
}

export type PullLimits = { maxLayerBytes: number; maxLockBytes: number }

const DEFAULT_LIMITS: PullLimits = { maxLayerBytes: 256 * 1024 * 1024, maxLockBytes: 4 * 1024 * 1024 }

export type PulledSpinApp = {
  digest: string
  manifest: ImageManifest
  lockedApp: LockedApp
  /** Wasm by layer digest. */
  wasm: Map<string, Buffer>
}

/** Pull the manifest under `reference` (tag or digest), check it as the shim would, fetch its layers. */
export async function pullSpinApp(
  store: ArtifactStore,
  reference: string,
  limits: PullLimits = DEFAULT_LIMITS,
): Promise<PulledSpinApp> {
  const { bytes, digest } = await store.getManifest(reference)
  let manifest: ImageManifest
  try {
    manifest = JSON.parse(bytes.toString('utf8')) as ImageManifest
  } catch {
    throw new Error('the manifest is not JSON')
  }
  checkManifestShape(manifest)
  const config = JSON.parse(
    (await store.getBlob(manifest.config.digest, limits.maxLockBytes)).toString('utf8'),
  ) as ImageConfig
  const lockLayer = manifest.layers.find((layer) => layer.mediaType === LOCKED_APP_MEDIA_TYPE) as Descriptor
  const label = config.config?.Labels?.[LOCKED_APP_DIGEST_LABEL]
  if (label !== lockLayer.digest)
    throw new Error(
      `the config's ${LOCKED_APP_DIGEST_LABEL} label (${String(label)}) does not name the locked app layer ${lockLayer.digest}`,
    )
  const lockBytes = await store.getBlob(lockLayer.digest, limits.maxLockBytes)
  verifyDigest(lockBytes, lockLayer.digest, 'locked app layer')
  const lockedApp = parseLockedApp(lockBytes)
  const wasmLayers = new Set(
    manifest.layers.filter((layer) => layer.mediaType === WASM_LAYER_MEDIA_TYPE).map((layer) => layer.digest),
  )
  const wasm = new Map<string, Buffer>()
  for (const component of lockedApp.components) {
    const source = component.source.digest
    if (source === undefined || !wasmLayers.has(source))
      throw new Error(`component ${component.id}'s source is not a wasm layer of the manifest`)
    if (!wasm.has(source)) wasm.set(source, await store.getBlob(source, limits.maxLayerBytes))
  }
  return { digest, manifest, lockedApp, wasm }
}

function checkManifestShape(manifest: ImageManifest): void {
  if (manifest.schemaVersion !== 2) throw new Error('the manifest is not schemaVersion 2')
  if (manifest.mediaType !== undefined && manifest.mediaType !== MANIFEST_MEDIA_TYPE)
    throw new Error(`the manifest is a ${String(manifest.mediaType)}, not an OCI image manifest`)
  if (manifest.config?.mediaType !== CONFIG_MEDIA_TYPE || !isDigest(manifest.config.digest))
    throw new Error(`the manifest's config is not ${CONFIG_MEDIA_TYPE}`)
  if (!Array.isArray(manifest.layers)) throw new Error('the manifest has no layers')
  const known = new Set([LOCKED_APP_MEDIA_TYPE, WASM_LAYER_MEDIA_TYPE, DATA_LAYER_MEDIA_TYPE])
  for (const layer of manifest.layers) {
    if (!known.has(layer.mediaType))
      throw new Error(`the manifest has a layer of unknown media type ${JSON.stringify(layer.mediaType)}`)
    if (!isDigest(layer.digest)) throw new Error('the manifest has a layer without a sha256 digest')
  }
  if (manifest.layers.filter((layer) => layer.mediaType === LOCKED_APP_MEDIA_TYPE).length !== 1)
    throw new Error(`the manifest needs exactly one ${LOCKED_APP_MEDIA_TYPE} layer`)
}

function parseLockedApp(bytes: Buffer): LockedApp {
  let app: LockedApp
  try {
    app = JSON.parse(bytes.toString('utf8')) as LockedApp
  } catch {
    throw new Error('the locked app layer is not JSON')
  }
  if (app.spin_lock_version !== 1) throw new Error(`unsupported spin_lock_version ${String(app.spin_lock_version)}`)
  if (!Array.isArray(app.triggers) || !Array.isArray(app.components))
    throw new Error('the locked app has no triggers or components')
  return app
}
