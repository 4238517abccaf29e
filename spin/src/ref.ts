// Artifact references: a registry one (`host[:port]/repo/path[:tag][@sha256:...]`, the host
// always written out, no Docker Hub default) or an OCI image-layout directory on this machine
// (`oci-layout:/abs/dir[:tag][@sha256:...]`), the embedded store of the no-cluster mode.
import { isDigest } from './digest.js'

export type RegistryRef = {
  kind: 'registry'
  registry: string
  repository: string
  tag: string | null
  digest: string | null
}
type LayoutRef = { kind: 'oci-layout'; dir: string; tag: string | null; digest: string | null }
export type ArtifactRef = RegistryRef | LayoutRef

const LAYOUT_PREFIX = 'oci-layout:'
// The distribution spec's grammar for repository path components and tags.
const PATH_COMPONENT = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/
const TAG = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$/
const HOST =
  /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?$/
const MAX_REF_LENGTH = 1024

export function parseRef(text: string): ArtifactRef {
  if (text.length > MAX_REF_LENGTH) throw new Error(`artifact reference longer than ${MAX_REF_LENGTH} characters`)
  let rest = text
  let digest: string | null = null
  const at = rest.lastIndexOf('@')
  if (at !== -1) {
    digest = rest.slice(at + 1)
    if (!isDigest(digest)) throw new Error(`invalid digest in reference ${JSON.stringify(text)}`)
    rest = rest.slice(0, at)
  }
  if (rest.startsWith(LAYOUT_PREFIX)) return parseLayout(text, rest.slice(LAYOUT_PREFIX.length), digest)
  const slash = rest.indexOf('/')
  if (slash === -1) throw new Error(`invalid reference ${JSON.stringify(text)}: expected host/repository[:tag]`)
  const registry = rest.slice(0, slash)
  if (!HOST.test(registry) || !(registry.includes('.') || registry.includes(':') || registry === 'localhost')) {
    throw new Error(
      `invalid reference ${JSON.stringify(text)}: the registry host must be written out (e.g. registry.example.com/app)`,
    )
  }
  let path = rest.slice(slash + 1)
  let tag: string | null = null
  const colon = path.lastIndexOf(':')
  if (colon !== -1) {
    tag = path.slice(colon + 1)
    path = path.slice(0, colon)
    if (!TAG.test(tag)) throw new Error(`invalid tag in reference ${JSON.stringify(text)}`)
  }
  if (path === '' || !path.split('/').every((part) => PATH_COMPONENT.test(part))) {
    throw new Error(
      `invalid repository in reference ${JSON.stringify(text)}: lowercase letters, digits and . _ - between them`,
    )
  }
  if (tag === null && digest === null) tag = 'latest'
  return { kind: 'registry', registry, repository: path, tag, digest }
}

function parseLayout(text: string, rest: string, digest: string | null): LayoutRef {
  let dir = rest
  let tag: string | null = null
  const colon = rest.lastIndexOf(':')
  if (colon !== -1 && !rest.slice(colon + 1).includes('/')) {
    tag = rest.slice(colon + 1)
    dir = rest.slice(0, colon)
    if (!TAG.test(tag)) throw new Error(`invalid tag in reference ${JSON.stringify(text)}`)
  }
  if (!dir.startsWith('/'))
    throw new Error(`invalid reference ${JSON.stringify(text)}: oci-layout needs an absolute directory`)
  if (dir.split('/').some((part) => part === '..'))
    throw new Error(`invalid reference ${JSON.stringify(text)}: ".." in the directory`)
  if (tag === null && digest === null) tag = 'latest'
  return { kind: 'oci-layout', dir, tag, digest }
}

export function formatRef(ref: ArtifactRef): string {
  const base = ref.kind === 'registry' ? `${ref.registry}/${ref.repository}` : `${LAYOUT_PREFIX}${ref.dir}`
  return `${base}${ref.tag === null ? '' : `:${ref.tag}`}${ref.digest === null ? '' : `@${ref.digest}`}`
}

/** The reference pinned to `digest`: what a deployment pulls, immune to the tag moving. */
export function pinnedRef(ref: ArtifactRef, digest: string): string {
  return formatRef({ ...ref, tag: null, digest })
}

/** Whether plain http is safe by default: the registry is on this machine. */
export function isLoopbackRegistry(registry: string): boolean {
  const host = registry.replace(/:[0-9]+$/, '').replace(/^\[|\]$/g, '')
  return host === 'localhost' || host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host)
}
