// Reading deploy/ without kustomize or a cluster: each kustomization's resources, components
// and generators followed to the manifests they add up to, with the few transformations the
// overlays use (namespace, images, replicas, ConfigMap merges). Everything a kustomization
// names that is missing is collected instead of thrown, so a test can list it all at once.
import { existsSync, readFileSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'
import { parseAllDocuments } from 'yaml'

export type Manifest = {
  apiVersion: string
  kind: string
  metadata: { name: string; namespace?: string; labels?: Record<string, string> }
  spec?: any
  [key: string]: any
  /** The file it came from, relative to deploy/. */
  source: string
}

export type Build = {
  manifests: Manifest[]
  /** Generated ConfigMaps by name: their data after every merge. */
  configMaps: Map<string, Record<string, string>>
  secrets: Set<string>
  /** Every file a kustomization in this build named, relative to deploy/. */
  files: Set<string>
  /** Every file a kustomization named that does not exist (or a kind that cannot be there). */
  missing: string[]
}

type Generator = { name: string; behavior?: string; envs?: string[]; files?: string[]; literals?: string[] }

type Kustomization = {
  apiVersion: string
  kind: string
  namespace?: string
  resources?: string[]
  components?: string[]
  configMapGenerator?: Generator[]
  secretGenerator?: Generator[]
  images?: Array<{ name: string; newName?: string; newTag?: string }>
  replicas?: Array<{ name: string; count: number }>
  patches?: unknown[]
}

function readYamlDocuments (file: string): any[] {
  return parseAllDocuments(readFileSync(file, 'utf8')).map((doc) => {
    if (doc.errors.length > 0) throw new Error(`${file}: ${doc.errors.map((error) => error.message).join('; ')}`)
    return doc.toJS()
  }).filter((doc) => doc !== null)
}

/** KEY=VALUE lines, as kustomize reads `envs` files; blank lines and # comments skipped. */
function readEnvFile (file: string): Record<string, string> {
  const data: Record<string, string> = {}
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (line.trim() === '' || line.trimStart().startsWith('#')) continue
    const equals = line.indexOf('=')
    data[line.slice(0, equals)] = line.slice(equals + 1)
  }
  return data
}

export function buildKustomization (root: string, dir: string): Build {
  const build: Build = { manifests: [], configMaps: new Map(), secrets: new Set(), files: new Set(), missing: [] }
  const rel = (path: string): string => relative(root, path)
  const file = join(dir, 'kustomization.yaml')
  if (!existsSync(file)) {
    build.missing.push(`${rel(file)} (named as a directory resource or component)`)
    return build
  }
  build.files.add(rel(file))
  const k = readYamlDocuments(file)[0] as Kustomization

  const merge = (other: Build): void => {
    build.manifests.push(...other.manifests)
    for (const [name, data] of other.configMaps) build.configMaps.set(name, data)
    for (const name of other.secrets) build.secrets.add(name)
    for (const name of other.files) build.files.add(name)
    build.missing.push(...other.missing)
  }

  for (const entry of k.resources ?? []) {
    const path = join(dir, entry)
    if (!existsSync(path)) build.missing.push(`${rel(path)} (resource of ${rel(file)})`)
    else if (statSync(path).isDirectory()) merge(buildKustomization(root, path))
    else {
      build.files.add(rel(path))
      for (const doc of readYamlDocuments(path)) build.manifests.push({ ...doc, source: rel(path) })
    }
  }
  for (const entry of k.components ?? []) {
    const path = join(dir, entry)
    const component = join(path, 'kustomization.yaml')
    if (existsSync(component) && (readYamlDocuments(component)[0] as Kustomization).kind !== 'Component') {
      build.missing.push(`${rel(component)} is not a Component (component of ${rel(file)})`)
    }
    merge(buildKustomization(root, path))
  }

  const generatedData = (generator: Generator): Record<string, string> => {
    const data: Record<string, string> = {}
    for (const envs of generator.envs ?? []) {
      const path = join(dir, envs)
      if (!existsSync(path)) build.missing.push(`${rel(path)} (envs of ${generator.name} in ${rel(file)})`)
      else {
        build.files.add(rel(path))
        Object.assign(data, readEnvFile(path))
      }
    }
    for (const entry of generator.files ?? []) {
      const [key, source = key] = entry.includes('=') ? entry.split('=') as [string, string] : [entry.split('/').pop()!, entry]
      const path = join(dir, source)
      if (!existsSync(path)) build.missing.push(`${rel(path)} (files of ${generator.name} in ${rel(file)})`)
      else {
        build.files.add(rel(path))
        data[key] = readFileSync(path, 'utf8')
      }
    }
    for (const literal of generator.literals ?? []) {
      const equals = literal.indexOf('=')
      data[literal.slice(0, equals)] = literal.slice(equals + 1)
    }
    return data
  }
  for (const generator of k.configMapGenerator ?? []) {
    const existing = build.configMaps.get(generator.name)
    if (generator.behavior === 'merge' || generator.behavior === 'replace') {
      if (existing === undefined) build.missing.push(`ConfigMap ${generator.name} to ${generator.behavior} (in ${rel(file)})`)
    }
    const data = generatedData(generator)
    build.configMaps.set(generator.name, generator.behavior === 'merge' ? { ...existing, ...data } : data)
  }
  for (const generator of k.secretGenerator ?? []) {
    generatedData(generator)
    build.secrets.add(generator.name)
  }

  for (const { name, count } of k.replicas ?? []) {
    const target = build.manifests.find((m) => m.metadata.name === name && ['Deployment', 'StatefulSet'].includes(m.kind))
    if (target === undefined) build.missing.push(`workload ${name} for replicas (in ${rel(file)})`)
    else target.spec.replicas = count
  }
  for (const image of k.images ?? []) {
    const containers = build.manifests.flatMap((m) => m.spec?.template?.spec?.containers ?? [])
    const matching = containers.filter((container: { image: string }) => container.image.replace(/:[^:/]+$/, '') === image.name)
    if (matching.length === 0) build.missing.push(`image ${image.name} (in ${rel(file)})`)
    for (const container of matching) {
      const [name, tag] = [container.image.replace(/:[^:/]+$/, ''), /:([^:/]+)$/.exec(container.image)?.[1]]
      container.image = `${image.newName ?? name}:${image.newTag ?? tag}`
    }
  }
  // The overlays stay within what this reader applies; a patch would need kustomize itself.
  if ((k.patches ?? []).length > 0) build.missing.push(`patches in ${rel(file)}: not modelled by test/helpers/manifests.ts`)
  if (k.namespace !== undefined) {
    for (const manifest of build.manifests) if (manifest.kind !== 'Namespace') manifest.metadata.namespace = k.namespace
  }
  return build
}
