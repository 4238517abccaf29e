// A pushed Spin application given another set of variables without a rebuild: a new locked
// app that declares them, in a new artifact that reuses the compiled wasm layers. Only the lock
// layer, the image config (its lockedAppDigest label) and the manifest are new, a few KiB
// however big the components are, so a new variable name takes effect as fast as a new value.
//
// Followed: spinframework/spin crates/locked-app/src/locked.rs (the lock's top-level
// `variables`, each a `Variable { description?, default?, secret }` whose missing default makes
// it required; each component's `config`, key to a template such as "{{ name }}"; the field
// order Spin serializes) and crates/expressions (a component reads a config key; the template's
// `{{ name }}` is the application variable, resolved by providers first, then the default).
// containerd-shim-spin resolves those from the environment: `SPIN_VARIABLE_<NAME>` (Spin's env
// provider), which the SpinApp's `variables` set on the pod.
import { sha256Digest } from './digest.js'
import type { ImageConfig, ImageManifest, LockedApp } from './format.js'
import { configReading, LOCKED_APP_DIGEST_LABEL, LOCKED_APP_MEDIA_TYPE, MANIFEST_MEDIA_TYPE } from './format.js'
import { parseRef, pinnedRef } from './ref.js'
import { isVariableName } from './variable-name.js'
import type { ArtifactStore } from './artifact-store.js'
import type { StoreOptions } from './store.js'
import { openStore } from './store.js'

export type RelockResult = {
  /** The new manifest's digest (the same as the original's when nothing changed). */
  digest: string
  /** Blobs written (0 when the artifact already existed) and their bytes, manifest included. */
  pushedBlobs: number
  pushedBytes: number
}

export type RelockOptions = {
  /** Names whose values are secret: Spin keeps them out of its logs. */
  secret?: ReadonlySet<string>
  /** Tag the new manifest; by default it is stored under its digest only. */
  tag?: string
  maxLockBytes?: number
}

const DEFAULT_MAX_LOCK_BYTES = 4 * 1024 * 1024

/**
 * Store, beside the artifact `reference` (a tag or digest in `store`), one whose lock declares
 * `names` (sorted, each required: the platform always gives a value) beside the variables its
 * functions declared with a default, and maps each name in every component's `config` to
 * itself. Deterministic: the same artifact and names give the same digest, and no names give
 * back the artifact's own declarations only.
 */
export async function relockVariables(
  store: ArtifactStore,
  reference: string,
  names: readonly string[],
  options: RelockOptions = {},
): Promise<RelockResult> {
  const bad = names.find((name) => !isVariableName(name))
  if (bad !== undefined)
    throw new Error(
      `${JSON.stringify(bad)} is not a Spin variable name (lowercase letters, digits and _, starting with a letter)`,
    )
  const maxLockBytes = options.maxLockBytes ?? DEFAULT_MAX_LOCK_BYTES
  const { bytes: manifestBytes } = await store.getManifest(reference)
  const manifest = JSON.parse(manifestBytes.toString('utf8')) as ImageManifest
  if (manifest.schemaVersion !== 2 || !Array.isArray(manifest.layers))
    throw new Error('the artifact is not an OCI image manifest')
  const lockIndex = manifest.layers.findIndex((layer) => layer.mediaType === LOCKED_APP_MEDIA_TYPE)
  if (lockIndex === -1) throw new Error(`the artifact has no ${LOCKED_APP_MEDIA_TYPE} layer: not a Spin application`)
  const lockedApp = JSON.parse(
    (await store.getBlob((manifest.layers[lockIndex] as { digest: string }).digest, maxLockBytes)).toString('utf8'),
  ) as LockedApp
  const config = JSON.parse((await store.getBlob(manifest.config.digest, maxLockBytes)).toString('utf8')) as ImageConfig

  const lockBytes = Buffer.from(
    JSON.stringify(withVariables(lockedApp, [...new Set(names)].sort(), options.secret ?? new Set())),
  )
  const lockDigest = sha256Digest(lockBytes)
  const newConfig: ImageConfig = {
    ...config,
    config: { ...config.config, Labels: { ...config.config?.Labels, [LOCKED_APP_DIGEST_LABEL]: lockDigest } },
  }
  const configBytes = Buffer.from(JSON.stringify(newConfig))
  const configDigest = sha256Digest(configBytes)
  const layers = manifest.layers.map((layer, index) =>
    index === lockIndex ? { ...layer, digest: lockDigest, size: lockBytes.length } : layer,
  )
  const newManifest: ImageManifest = {
    ...manifest,
    config: { ...manifest.config, digest: configDigest, size: configBytes.length },
    layers,
  }
  const newManifestBytes = Buffer.from(JSON.stringify(newManifest))
  const digest = sha256Digest(newManifestBytes)

  let pushedBlobs = 0
  let pushedBytes = 0
  const ensure = async (blobDigest: string, bytes: Uint8Array): Promise<void> => {
    if (await store.hasBlob(blobDigest)) return
    await store.pushBlob(bytes, blobDigest)
    pushedBlobs++
    pushedBytes += bytes.length
  }
  // The wasm layers are the original's: present, never sent again (HEAD answers for them).
  for (const layer of layers) {
    if (layer.digest === lockDigest) continue
    if (!(await store.hasBlob(layer.digest)))
      throw new Error(`layer ${layer.digest} of the artifact is missing from the store`)
  }
  await ensure(lockDigest, lockBytes)
  await ensure(configDigest, configBytes)
  const exists = options.tag === undefined && (await manifestExists(store, digest))
  if (!exists) {
    await store.pushManifest(newManifestBytes, MANIFEST_MEDIA_TYPE, options.tag ?? digest)
    pushedBlobs++
    pushedBytes += newManifestBytes.length
  }
  return { digest, pushedBlobs, pushedBytes }
}

/**
 * `image` (a reference as a build names it) re-locked to declare `names` too, as a
 * digest-pinned reference in the same repository or layout: what a deployment runs. No names:
 * `image` itself, untouched (nothing is read).
 */
export async function relockReference(
  image: string,
  names: readonly string[],
  options: StoreOptions & RelockOptions,
): Promise<string> {
  if (names.length === 0) return image
  const ref = parseRef(image)
  const store = await openStore(ref, options)
  const result = await relockVariables(store, ref.digest ?? ref.tag ?? 'latest', names, options)
  return pinnedRef(ref, result.digest)
}

async function manifestExists(store: ArtifactStore, digest: string): Promise<boolean> {
  try {
    await store.getManifest(digest)
    return true
  } catch {
    return false
  }
}

// The lock with the application's variables declared beside those the functions declared with a
// default when they were built (spin/src/function-variables.ts): a name the application sets is
// required and keeps its default; every component reads it. A declaration without a default is
// an earlier relock's and goes, so relocking a relocked artifact declares exactly `names` again.
// Keys are in the order Spin writes them, so the same names always give the same bytes.
function withVariables(app: LockedApp, names: string[], secret: ReadonlySet<string>): LockedApp {
  const {
    spin_lock_version: version,
    must_understand: mustUnderstand,
    metadata,
    host_requirements: hostRequirements,
    variables: built,
    triggers,
    components,
  } = app
  const defaults = new Map<string, string>()
  for (const [name, variable] of Object.entries(built ?? {})) {
    const value = (variable as { default?: unknown } | null)?.default
    if (typeof value === 'string') defaults.set(name, value)
  }
  const variables: Record<string, { default?: string; secret?: true }> = {}
  for (const name of [...new Set([...defaults.keys(), ...names])].sort()) {
    const value = defaults.get(name)
    variables[name] = {
      ...(value === undefined ? {} : { default: value }),
      ...(secret.has(name) ? { secret: true } : {}),
    }
  }
  return {
    spin_lock_version: version,
    ...(mustUnderstand === undefined ? {} : { must_understand: mustUnderstand }),
    ...(metadata === undefined ? {} : { metadata }),
    ...(hostRequirements === undefined ? {} : { host_requirements: hostRequirements }),
    ...(Object.keys(variables).length === 0 ? {} : { variables }),
    triggers,
    components: components.map((component) => {
      const { config: old, ...rest } = component
      const config = configReading([...Object.keys(old ?? {}).filter((key) => defaults.has(key)), ...names])
      return Object.keys(config).length === 0 ? rest : { ...rest, config }
    }),
  }
}
