// The cluster runtime's own settings: the API server and namespace, the build Jobs (images,
// credentials, resources, life), the SpinApps' pull Secret and their public routes.
import { anyText, ConfigError, parseHttpUrl } from '@session-relay/common/config/settings'
import { DEFAULT_BUILDER_IMAGES } from '../model/builder-images.js'
import type { LanguageT } from '../model/resources.js'
import type { PolicySettings } from '../domain/policy-settings.js'
import type { RegistrySettings } from '../registry/settings.js'
import type { RuntimeSettings } from '../runtime/settings.js'
import { LANGUAGES } from '@session-relay/spin/languages'
import { parseSeconds, rowOf, withoutTrailingSlash } from '../setting-parsers.js'

/** What makes deployment.publicUrl answer: a Gateway API HTTPRoute, an Ingress, or nothing (made elsewhere). */
type PublicRouteKind = 'httproute' | 'ingress' | 'none'

export type ClusterSettings = {
  kubeconfig: string
  namespace: string
  builderImages: Record<LanguageT, string> // '' : builds of that language answer 503
  builderRegistrySecret: string // '' : the builder gets no push credentials
  buildTtlMs: number
  buildCpu: string // Kubernetes quantities, requests and limits of the build container
  buildMemory: string
  buildEphemeralStorage: string // request and limit of the build container's disk, and its /tmp's size
  imagePullSecret: string // the SpinApps' imagePullSecrets entry
  publicBaseUrl: string // without trailing slash
  publicRoute: PublicRouteKind
  gateway: string // [namespace/]name of the Gateway the HTTPRoutes attach to
  ingressClass: string // '' : the cluster's default class
}

/** What the cluster runtime is given: its section, the registry it pushes to and pulls from, the shared timeouts, every SpinApp's replicas. */
export type ClusterRuntimeConfig = ClusterSettings &
  RegistrySettings &
  Pick<RuntimeSettings, 'buildTimeoutMs' | 'invokeTimeoutMs'> &
  Pick<PolicySettings, 'replicas'>

const setting = rowOf<ClusterSettings>()

// Kubernetes namespaces are RFC 1123 labels.
function parseNamespace(text: string): string {
  if (!/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(text))
    throw new Error('expected a Kubernetes namespace name (lowercase letters, digits and "-", at most 63)')
  return text
}

function parseBuilderImages(text: string): Record<LanguageT, string> {
  const images: Record<LanguageT, string> = { go: '', js: '', ts: '', rust: '' }
  if (text === '') return images
  for (const pair of text.split(',')) {
    const equals = pair.indexOf('=')
    const language = pair.slice(0, equals).trim()
    const image = pair.slice(equals + 1).trim()
    if (equals === -1 || image === '' || /\s/.test(image))
      throw new Error('expected language=image pairs separated by ",", e.g. go=builders/go:1,rust=builders/rust:1')
    if (!(LANGUAGES as readonly string[]).includes(language))
      throw new Error(`unknown language ${JSON.stringify(language)}: expected ${LANGUAGES.join(', ')}`)
    images[language as LanguageT] = image
  }
  return images
}

// Kubernetes resource quantities: 500m, 1, 1.5, 2Gi, 512M.
function parseQuantity(text: string): string {
  if (!/^[0-9]+(\.[0-9]+)?(m|k|M|G|T|Ki|Mi|Gi|Ti)?$/.test(text))
    throw new Error('expected a Kubernetes quantity such as 500m, 2 or 2Gi')
  return text
}

// Secret names are RFC 1123 subdomains.
function parseSecretName(text: string): string {
  if (text !== '' && !/^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/.test(text))
    throw new Error('expected a Kubernetes Secret name')
  return text
}

// The base URL of the public routes: path-based (https://fn.example.com, optionally under a
// path) or host-based (https://*.fn.example.com, the application's name in place of "*").
function parsePublicBaseUrl(text: string): string {
  const url = withoutTrailingSlash(parseHttpUrl(text))
  if (url === '') return ''
  const parsed = new URL(url)
  if (parsed.search !== '' || parsed.hash !== '' || parsed.username !== '' || parsed.password !== '')
    throw new Error('expected no query, fragment or credentials')
  if (parsed.hostname.includes('*') && (!/^\*\.[^*]+$/.test(parsed.hostname) || parsed.pathname !== '/'))
    throw new Error('expected "*" only as the first label of the host and no path, e.g. https://*.fn.example.com')
  return url
}

function parsePublicRoute(text: string): PublicRouteKind {
  if (text !== 'httproute' && text !== 'ingress' && text !== 'none')
    throw new Error('expected httproute, ingress or none')
  return text
}

// A Gateway's name, optionally after its namespace: both RFC 1123.
function parseGateway(text: string): string {
  if (text !== '' && !/^([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\/)?[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/.test(text))
    throw new Error('expected a Gateway name, or namespace/name')
  return text
}

export const clusterSettings = [
  setting({
    key: 'kubeconfig',
    env: 'PLATFORM_KUBECONFIG',
    flag: '--kubeconfig',
    default: '',
    parse: anyText,
    help: 'kubeconfig file; empty: in-cluster account, KUBECONFIG or ~/.kube/config',
  }),
  setting({
    key: 'namespace',
    env: 'PLATFORM_NAMESPACE',
    flag: '--namespace',
    default: 'default',
    parse: parseNamespace,
    help: 'namespace of the build Jobs and Secrets and the SpinApps',
  }),
  setting({
    key: 'builderImages',
    env: 'PLATFORM_BUILDER_IMAGES',
    flag: '--builder-images',
    default: DEFAULT_BUILDER_IMAGES,
    parse: parseBuilderImages,
    help: 'builder image per language, go=IMAGE,js=IMAGE,ts=IMAGE,rust=IMAGE',
  }),
  setting({
    key: 'builderRegistrySecret',
    env: 'PLATFORM_BUILDER_REGISTRY_SECRET',
    flag: '--builder-registry-secret',
    default: '',
    parse: anyText,
    help: 'dockerconfigjson Secret with the push credentials of --image-repository',
  }),
  setting({
    key: 'buildTtlMs',
    env: 'PLATFORM_BUILD_TTL',
    flag: '--build-ttl',
    default: '1h',
    parse: parseSeconds,
    help: 'how long a finished build Job, its pod and Secret stay',
  }),
  setting({
    key: 'buildCpu',
    env: 'PLATFORM_BUILD_CPU',
    flag: '--build-cpu',
    default: '1',
    parse: parseQuantity,
    help: 'CPU request and limit of the build container (Kubernetes quantity)',
  }),
  setting({
    key: 'buildMemory',
    env: 'PLATFORM_BUILD_MEMORY',
    flag: '--build-memory',
    default: '2Gi',
    parse: parseQuantity,
    help: 'memory request and limit of the build container',
  }),
  setting({
    key: 'buildEphemeralStorage',
    env: 'PLATFORM_BUILD_EPHEMERAL_STORAGE',
    flag: '--build-ephemeral-storage',
    default: '4Gi',
    parse: parseQuantity,
    help: 'disk request and limit of the build container, and the size of its writable /tmp',
  }),
  setting({
    key: 'imagePullSecret',
    env: 'PLATFORM_IMAGE_PULL_SECRET',
    flag: '--image-pull-secret',
    default: '',
    parse: parseSecretName,
    help: "Secret the SpinApps' pods pull their image with; empty: none",
  }),
  setting({
    key: 'publicBaseUrl',
    env: 'PLATFORM_PUBLIC_BASE_URL',
    flag: '--public-base-url',
    default: '',
    parse: parsePublicBaseUrl,
    help: 'where deployed applications answer (a path prefix or *.host); empty: none',
  }),
  setting({
    key: 'publicRoute',
    env: 'PLATFORM_PUBLIC_ROUTE',
    flag: '--public-route',
    default: 'httproute',
    parse: parsePublicRoute,
    help: 'what routes --public-base-url: httproute, ingress or none',
  }),
  setting({
    key: 'gateway',
    env: 'PLATFORM_GATEWAY',
    flag: '--gateway',
    default: '',
    parse: parseGateway,
    help: 'the Gateway ([namespace/]name) the HTTPRoutes attach to',
  }),
  setting({
    key: 'ingressClass',
    env: 'PLATFORM_INGRESS_CLASS',
    flag: '--ingress-class',
    default: '',
    parse: anyText,
    help: "the Ingresses' ingressClassName; empty: the cluster's default",
  }),
]

/** An HTTPRoute needs a Gateway to attach to: refused at the start rather than at the first deploy. */
export function checkClusterSettings(config: ClusterSettings): void {
  if (config.publicBaseUrl !== '' && config.publicRoute === 'httproute' && config.gateway === '') {
    throw new ConfigError(
      '--public-base-url (PLATFORM_PUBLIC_BASE_URL) with --public-route httproute needs --gateway (PLATFORM_GATEWAY), or --public-route ingress or none',
    )
  }
}
