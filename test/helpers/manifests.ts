// deploy/ as a cluster gets it: each kustomization rendered by kustomize itself (built at its
// pinned version by scripts/install-kube-apiserver.sh, which npm test runs), so the manifest
// tests read exactly what `kubectl apply -k` would apply, transformers and all. Beside the
// rendering, the files each kustomization names, read from the kustomization files alone: what
// the "every file in deploy/ is used" check and the "labels survive" check need.
import { spawnSync } from 'node:child_process'
import { existsSync, readFileSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'
import { parse, parseAllDocuments } from 'yaml'
import { kubeBinDir } from './kube-apiserver.js'

export type Manifest = {
  apiVersion: string
  kind: string
  metadata: { name: string; namespace?: string; labels?: Record<string, string> }
  spec?: any
  data?: Record<string, string>
  [key: string]: any
}

export type Build = {
  manifests: Manifest[]
  /**
   * ConfigMaps by name: their data. A generated one is there by its rendered name (with the hash
   * suffix the references carry) and by its generator's name.
   */
  configMaps: Map<string, Record<string, string>>
  /** The Secrets the build makes, by rendered name. */
  secrets: Set<string>
  /** Every file a kustomization in this build names, relative to deploy/. */
  files: Set<string>
}

// kustomize's suffix of a generated object's name: a dash and ten characters of a hash.
const HASH_SUFFIX = /-[a-z0-9]{10}$/

function parseDocuments(text: string, what: string): Manifest[] {
  return parseAllDocuments(text)
    .map((document) => {
      if (document.errors.length > 0)
        throw new Error(`${what}: ${document.errors.map((error) => error.message).join('; ')}`)
      return document.toJS() as Manifest
    })
    .filter((object) => object !== null)
}

/** `kustomize build dir`: the objects it renders, or an error with kustomize's reason. */
export function kustomize(dir: string): Manifest[] {
  const binary = join(kubeBinDir(), 'kustomize')
  if (!existsSync(binary))
    throw new Error('kustomize is not built: run scripts/install-kube-apiserver.sh; npm test does it')
  const result = spawnSync(binary, ['build', dir], { encoding: 'utf8' })
  if (result.status !== 0) throw new Error(`kustomize build ${dir}: ${result.stderr || result.error?.message}`)
  return parseDocuments(result.stdout, `kustomize build ${dir}`)
}

type Generator = { envs?: string[]; files?: string[] }
type Kustomization = {
  resources?: string[]
  components?: string[]
  configMapGenerator?: Generator[]
  secretGenerator?: Generator[]
  patches?: Array<{ path?: string }>
}

/** The files the kustomization in `dir` names (its own, its bases', its components'), relative to `root`. */
function namedFiles(root: string, dir: string, files = new Set<string>()): Set<string> {
  const file = join(dir, 'kustomization.yaml')
  files.add(relative(root, file))
  const k = parse(readFileSync(file, 'utf8')) as Kustomization
  for (const entry of [...(k.resources ?? []), ...(k.components ?? [])]) {
    const path = join(dir, entry)
    if (existsSync(path) && statSync(path).isDirectory()) namedFiles(root, path, files)
    else files.add(relative(root, path))
  }
  for (const generator of [...(k.configMapGenerator ?? []), ...(k.secretGenerator ?? [])]) {
    for (const entry of [
      ...(generator.envs ?? []),
      ...(generator.files ?? []).map((f) => f.split('=').pop() as string),
    ])
      files.add(relative(root, join(dir, entry)))
  }
  for (const patch of k.patches ?? []) if (patch.path !== undefined) files.add(relative(root, join(dir, patch.path)))
  return files
}

/** The objects of the YAML files `files` names (relative to `root`), as written there. */
export function writtenManifests(root: string, files: Iterable<string>): Array<Manifest & { source: string }> {
  return [...files]
    .filter((file) => /\.ya?ml$/.test(file) && !file.endsWith('kustomization.yaml'))
    .flatMap((file) =>
      parseDocuments(readFileSync(join(root, file), 'utf8'), file).map((object) => ({ ...object, source: file })),
    )
}

export function buildKustomization(root: string, dir: string): Build {
  const manifests = kustomize(dir)
  const configMaps = new Map<string, Record<string, string>>()
  for (const map of manifests.filter((m) => m.kind === 'ConfigMap')) {
    configMaps.set(map.metadata.name, map.data ?? {})
    if (HASH_SUFFIX.test(map.metadata.name)) configMaps.set(map.metadata.name.replace(HASH_SUFFIX, ''), map.data ?? {})
  }
  const secrets = new Set(manifests.filter((m) => m.kind === 'Secret').map((m) => m.metadata.name))
  return { manifests, configMaps, secrets, files: namedFiles(root, dir) }
}
