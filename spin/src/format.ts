// The Spin OCI application format, as `spin registry push` writes it and SpinKube's
// containerd-shim-spin reads it. Followed: spinframework/spin at 94a8fc8a,
// crates/oci/src/client.rs (`push_locked_app`: wasm layers first, the locked app as the last
// layer, the image config's `com.fermyon.spin.lockedAppDigest` label, `architecture: wasm`)
// and crates/locked-app/src/locked.rs (the locked application's JSON fields).

export const MANIFEST_MEDIA_TYPE = 'application/vnd.oci.image.manifest.v1+json'
export const INDEX_MEDIA_TYPE = 'application/vnd.oci.image.index.v1+json'
export const CONFIG_MEDIA_TYPE = 'application/vnd.oci.image.config.v1+json'
/** The locked application JSON, as a layer (older artifacts had it as the config). */
export const LOCKED_APP_MEDIA_TYPE = 'application/vnd.fermyon.spin.application.v1+config'
export const WASM_LAYER_MEDIA_TYPE = 'application/vnd.wasm.content.layer.v1+wasm'
export const DATA_LAYER_MEDIA_TYPE = 'application/vnd.wasm.content.layer.v1+data'
export const LOCKED_APP_DIGEST_LABEL = 'com.fermyon.spin.lockedAppDigest'
/** The content type a locked component source names its wasm with. */
export const WASM_CONTENT_TYPE = 'application/wasm'

export type Descriptor = {
  mediaType: string
  digest: string
  size: number
  annotations?: Record<string, string>
}

export type ImageManifest = {
  schemaVersion: 2
  mediaType: string
  config: Descriptor
  layers: Descriptor[]
  annotations?: Record<string, string>
}

export type ImageConfig = {
  architecture: string
  os: string
  config: { Labels: Record<string, string> }
  rootfs: { type: 'layers'; diff_ids: string[] }
}

type LockedTrigger = {
  id: string
  trigger_type: string
  trigger_config: { component: string; route: string; [key: string]: unknown }
}

type LockedComponent = {
  id: string
  metadata?: Record<string, unknown>
  /** After a push: `{content_type, digest}`, the digest naming the component's wasm layer. */
  source: { content_type: string; digest?: string; source?: string }
  env?: Record<string, string>
  files?: unknown[]
  config?: Record<string, string>
}

export type LockedApp = {
  spin_lock_version: 1
  must_understand?: string[]
  metadata?: Record<string, unknown>
  host_requirements?: Record<string, unknown>
  variables?: Record<string, unknown>
  triggers: LockedTrigger[]
  components: LockedComponent[]
}

/**
 * A component's lock `config` reading each of `names` as the application variable of that name
 * (`"{{ name }}"`), sorted. The builder's lock and a relock write it alike, so relocking with a
 * name the build already declared gives the same bytes.
 */
export function configReading(names: Iterable<string>): Record<string, string> {
  const config: Record<string, string> = {}
  for (const name of [...new Set(names)].sort()) config[name] = `{{ ${name} }}`
  return config
}
