import type { ListenAddress, Setting } from '@session-relay/common/config/settings'
import {
  anyText,
  settingGiven,
  unauthenticatedAddress,
  ConfigError,
  parseBoolean,
  parseHttpUrl,
  parseListenAddress,
  parseLogLevel,
  parsePositiveBytes,
  parseTimerDuration,
  readSettings,
  usage,
} from '@session-relay/common/config/settings'
import { isIPv6 } from 'node:net'
import { formatDuration, parseDuration } from '@session-relay/common/config/duration'
import { DEFAULT_BUILDER_IMAGES } from './model/builder-images.js'
import type { LanguageT } from './model/resources.js'
import { LANGUAGES } from '@session-relay/spin/languages'
import { compareQuantities, parseQuantity as quantityValue, QUANTITY_RULE } from './model/quantity.js'

/** Where builds and deployments run: auto picks the cluster when one is configured or found, else this machine. */
type RuntimeChoice = 'auto' | 'cluster' | 'local'

type ResourcePolicyMode = 'open' | 'max' | 'forced'

/** What makes deployment.publicUrl answer: a Gateway API HTTPRoute, an Ingress, or nothing (made elsewhere). */
type PublicRouteKind = 'httproute' | 'ingress' | 'none'

/** A claim the token must carry: `value` equals the claim, or is one element of it when it is an array. */
export type RequiredClaim = { name: string; value: string }

export type ControlConfig = {
  addr: ListenAddress
  databaseUrl: string // empty: embedded PGlite in dataDir
  dataDir: string
  oidcIssuer: string
  oidcAudience: string // empty disables the audience check
  jwksMinRefreshMs: number // the provider's signing keys are refetched no sooner than this...
  jwksMaxRefreshMs: number // ...and no later than this, whatever their Cache-Control says
  devInsecureSkipAuth: boolean
  devInsecureListenAnywhere: boolean
  requiredClaim: RequiredClaim | null
  tenantClaim: string // empty: every caller is in the tenant `default`
  adminClaim: RequiredClaim | null // callers carrying it see and change every tenant
  readonlyClaim: RequiredClaim | null // callers carrying it (and not admin) may only read
  consoleClientId: string // public OAuth client the web console signs in with; empty: no sign-in offered
  consoleScopes: string
  consoleDir: string // the built console; empty: dist/console beside the code
  kubeconfig: string
  runtime: RuntimeChoice
  localBuilds: number // builds running at once on this machine (local runtime)
  localWorker: string // '' : the project's cargo build of worker/
  localCacheDir: string // '' : {dataDir}/runtime/worker/compiled
  localToolchainsDir: string // '' : {dataDir}/toolchains
  localGoProxy: string // where a machine without Go fetches the pinned one
  localAllowPrivateOutbound: string[] // CIDR ranges functions may reach although internal
  localIdleTimeoutMs: number // 0: never unload an idle application
  localWorkerThreads: number // the worker's threads serving requests
  localMaxConcurrentRequests: number // per application: requests holding an instance at once
  localMaxQueuedRequests: number // per application: requests waiting behind them, then 429
  localMemoryBudgetBytes: number | null // every instance's memory together, in the worker; null: its default
  maxTenantBuilds: number // builds running and queued per tenant, both runtimes
  namespace: string
  prometheusUrl: string // without trailing slash
  prometheusTimeoutMs: number // per query_range request, also sent to Prometheus as its own timeout
  metricsRateWindowMs: number // shortest rate() window; at least four scrape intervals
  metricsRetentionMs: number // without Prometheus: how long the data directory keeps each series
  publicBaseUrl: string // without trailing slash
  maxArchiveBytes: number // compressed upload and unpacked total of a source archive
  builderImages: Record<LanguageT, string> // '' : builds of that language answer 503
  imageRepository: string // where builders push, without trailing slash
  imagePullRepository: string // where nodes pull those images from, when another name reaches the same registry
  imagePullSecret: string // the SpinApps' imagePullSecrets entry
  builderRegistrySecret: string // '' : the builder gets no push credentials
  registryInsecure: boolean // the registry speaks plain HTTP
  registryTokenKey: string // '' : the control plane is no token server for the registry
  registryTokenService: string // the registry's auth.token.service
  registryPullCredentialTtlMs: number // life of a tenant's pull credential; renewed at half of it
  buildTimeoutMs: number
  buildTtlMs: number
  buildCpu: string // Kubernetes quantities, requests and limits of the build container
  buildMemory: string
  buildEphemeralStorage: string // request and limit of the build container's disk, and its /tmp's size
  replicas: number
  resyncIntervalMs: number // every deployment is compared with what should run this often
  resourcePolicy: ResourcePolicyMode
  resourceCpuRequest: string // Kubernetes quantities; '' : none
  resourceCpuLimit: string
  resourceMemoryRequest: string
  resourceMemoryLimit: string
  resourceMaxMemory: string // the largest memory request or limit an application may have, every mode; '' : none
  publicRoute: PublicRouteKind
  gateway: string // [namespace/]name of the Gateway the HTTPRoutes attach to
  ingressClass: string // '' : the cluster's default class
  secretKeyFile: string // '' : {dataDir}/secret.key, generated
  invokeTimeoutMs: number
  headersTimeoutMs: number // a request's headers must be complete within this
  minBodyBytes: number // a request body must bring at least this many bytes ...
  bodyRateWindowMs: number // ... in every window of this length, else the connection is cut
  keepAliveTimeoutMs: number // an idle keep-alive connection is closed after this
  maxConnections: number // connections past this many are closed on accept
  shutdownDelayMs: number // on SIGTERM: unready but still serving for this long, then stop
  logLevel: string
}

// Only ties each parser's return type to its key.
const setting = <K extends keyof ControlConfig>(row: Setting<ControlConfig, K>): Setting<ControlConfig, K> => row

// The URL may hold a password, so its row is marked secret and errors never repeat it.
function parseDatabaseUrl(text: string): string {
  if (text === '') return ''
  if (!/^postgres(ql)?:\/\//i.test(text) || !URL.canParse(text))
    throw new Error('expected a postgres:// or postgresql:// URL')
  return text
}

function parseRequiredClaim(text: string): RequiredClaim | null {
  if (text === '') return null
  const equals = text.indexOf('=')
  const name = text.slice(0, equals).trim()
  const value = text.slice(equals + 1).trim()
  if (equals === -1 || name === '' || value === '') throw new Error('expected claim=value, e.g. groups=platform-admins')
  return { name, value }
}

function parseClaimName(text: string): string {
  const name = text.trim()
  if (/[\s=]/.test(name)) throw new Error('expected the name of a claim, e.g. groups, tenant or sub')
  return name
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

function parseRuntime(text: string): RuntimeChoice {
  if (text !== 'auto' && text !== 'cluster' && text !== 'local') throw new Error('expected auto, cluster or local')
  return text
}

function parseIdleTimeout(text: string): number {
  const ms = parseDuration(text)
  return ms === 0 ? 0 : parseTimerDuration(text)
}

// The worker checks each range again; here a typo fails the start rather than the worker.
function parseCidrList(text: string): string[] {
  const ranges = text
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part !== '')
  for (const range of ranges) {
    const [address, bits, extra] = range.split('/')
    const isV4 =
      /^\d{1,3}(\.\d{1,3}){3}$/.test(address ?? '') && (address ?? '').split('.').every((octet) => Number(octet) <= 255)
    const isV6 = isIPv6(address ?? '')
    const maxBits = isV4 ? 32 : 128
    if (
      (!isV4 && !isV6) ||
      extra !== undefined ||
      (bits !== undefined && !(/^\d{1,3}$/.test(bits) && Number(bits) <= maxBits))
    )
      throw new Error(`expected CIDR ranges separated by commas, got ${JSON.stringify(range)}`)
  }
  return ranges
}

// Secret names are RFC 1123 subdomains.
function parseSecretName(text: string): string {
  if (text !== '' && !/^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/.test(text))
    throw new Error('expected a Kubernetes Secret name')
  return text
}

function parseScopes(text: string): string {
  const scopes = text.trim().split(/\s+/)
  if (!scopes.includes('openid'))
    throw new Error('expected space-separated scopes including openid, e.g. "openid offline_access"')
  return scopes.join(' ')
}

// Kubernetes namespaces are RFC 1123 labels.
function parseNamespace(text: string): string {
  if (!/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(text))
    throw new Error('expected a Kubernetes namespace name (lowercase letters, digits and "-", at most 63)')
  return text
}

// A window PromQL can hold: whole milliseconds, at least 1s (a rate needs two samples in it).
// At least an hour (the console's shortest charts); at most 30 days of 10 s steps per series.
function parseRetention(text: string): number {
  const ms = parseDuration(text)
  if (!(ms >= 3_600_000 && ms <= 30 * 24 * 3_600_000)) throw new Error('expected a duration from 1h to 720h, e.g. 24h')
  return ms
}

function parseRateWindow(text: string): number {
  const ms = parseTimerDuration(text)
  if (ms < 1000 || !Number.isInteger(ms))
    throw new Error('expected a duration of at least 1s in whole milliseconds, e.g. 1m')
  return ms
}

// Kubernetes resource quantities: 500m, 1, 1.5, 2Gi, 512M.
function parseQuantity(text: string): string {
  if (!/^[0-9]+(\.[0-9]+)?(m|k|M|G|T|Ki|Mi|Gi|Ti)?$/.test(text))
    throw new Error('expected a Kubernetes quantity such as 500m, 2 or 2Gi')
  return text
}

// The worker's --memory-budget-bytes (worker/src/budget.rs): whole bytes, at least 16 MiB.
function parseMemoryBudget(text: string): number | null {
  if (text === '') return null
  const value = quantityValue(text)
  const bytes = value === null ? null : (value.numerator + value.denominator - 1n) / value.denominator
  if (bytes === null || bytes < 16n * 2n ** 20n || bytes > BigInt(Number.MAX_SAFE_INTEGER))
    throw new Error('expected a memory quantity of at least 16Mi, such as 8Gi')
  return Number(bytes)
}

function parseResourcePolicy(text: string): ResourcePolicyMode {
  if (text !== 'open' && text !== 'max' && text !== 'forced') throw new Error('expected open, max or forced')
  return text
}

function parseOptionalQuantity(text: string): string {
  if (text !== '' && quantityValue(text) === null) throw new Error(`expected ${QUANTITY_RULE}`)
  return text
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

/** A parser of whole numbers from 1 to `max`. */
function integerUpTo(max: number): (text: string) => number {
  return (text) => {
    const n = Number(text)
    if (!/^[0-9]+$/.test(text) || n < 1 || n > max) throw new Error(`expected an integer from 1 to ${max}`)
    return n
  }
}

/** A parser of whole numbers from 0 to `max`. */
function integerFromZeroTo(max: number): (text: string) => number {
  return (text) => {
    const n = Number(text)
    if (!/^[0-9]+$/.test(text) || n > max) throw new Error(`expected an integer from 0 to ${max}`)
    return n
  }
}

// 0 is allowed (stop at once); a minute is far more than any load balancer needs.
function parseShutdownDelay(text: string): number {
  const ms = parseDuration(text)
  if (ms < 0 || ms > 60_000) throw new Error('expected a duration from 0s to 1m')
  return ms
}

// An image reference up to the tag: registry host, optional port and path, no tag or digest.
function parseImageRepository(text: string): string {
  if (text === '') return ''
  const trimmed = withoutTrailingSlash(text)
  if (!/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?(:[0-9]+)?(\/[a-z0-9]+([._-][a-z0-9]+)*)*$/.test(trimmed))
    throw new Error('expected a registry and path such as registry.example.com/apps')
  return trimmed
}

// A credential is checked in whole seconds and renewed at half its life: minutes at the least.
function parseCredentialTtl(text: string): number {
  const ms = parseTimerDuration(text)
  if (ms < 10 * 60_000) throw new Error('expected a duration of at least 10m, e.g. 24h')
  return ms
}

// Jobs count in whole seconds.
const parseSeconds = (text: string): number => Math.max(1, Math.round(parseTimerDuration(text) / 1000)) * 1000

const withoutTrailingSlash = (text: string): string => text.replace(/\/+$/, '')

// One row per setting. The default is written in the same syntax an operator would use and
// goes through the same parser, so the table documents itself.
export const settings = [
  setting({
    key: 'addr',
    env: 'PLATFORM_ADDR',
    flag: '--addr',
    default: ':8081',
    parse: parseListenAddress,
    help: 'listen address (:8081, 127.0.0.1:9000, [::1]:9000); port 0 picks a free one',
  }),
  setting({
    key: 'databaseUrl',
    env: 'PLATFORM_DATABASE_URL',
    flag: '--database-url',
    default: '',
    parse: parseDatabaseUrl,
    help: 'postgres:// URL; empty: embedded PGlite in the data directory',
    secret: true,
  }),
  setting({
    key: 'dataDir',
    env: 'PLATFORM_DATA_DIR',
    flag: '--data-dir',
    default: './data/control',
    parse: anyText,
    help: "the embedded database's directory; one process per directory",
  }),
  setting({
    key: 'oidcIssuer',
    env: 'PLATFORM_OIDC_ISSUER',
    flag: '--oidc-issuer',
    default: '',
    parse: parseHttpUrl,
    help: 'issuer of the id tokens, as in their iss; required unless auth is skipped',
  }),
  setting({
    key: 'oidcAudience',
    env: 'PLATFORM_OIDC_AUDIENCE',
    flag: '--oidc-audience',
    default: '',
    parse: anyText,
    help: 'expected aud (the OAuth client id); empty accepts any, with a warning',
  }),
  setting({
    key: 'jwksMinRefreshMs',
    env: 'PLATFORM_JWKS_MIN_REFRESH',
    flag: '--jwks-min-refresh',
    default: '1m',
    parse: parseTimerDuration,
    help: "floor of the JWKS's Cache-Control max-age: keys refetched no more often",
  }),
  setting({
    key: 'jwksMaxRefreshMs',
    env: 'PLATFORM_JWKS_MAX_REFRESH',
    flag: '--jwks-max-refresh',
    default: '1h',
    parse: parseTimerDuration,
    help: 'ceiling of that max-age: the longest a withdrawn key stays trusted',
  }),
  setting({
    key: 'devInsecureSkipAuth',
    env: 'PLATFORM_DEV_INSECURE_SKIP_AUTH',
    flag: '--dev-insecure-skip-auth',
    default: 'false',
    parse: parseBoolean,
    help: 'development only: no authentication at all, loopback only',
  }),
  setting({
    key: 'devInsecureListenAnywhere',
    env: 'PLATFORM_DEV_INSECURE_LISTEN_ANYWHERE',
    flag: '--dev-insecure-listen-anywhere',
    default: 'false',
    parse: parseBoolean,
    help: 'with --dev-insecure-skip-auth, allow a non-loopback --addr',
  }),
  setting({
    key: 'requiredClaim',
    env: 'PLATFORM_REQUIRED_CLAIM',
    flag: '--required-claim',
    default: '',
    parse: parseRequiredClaim,
    help: 'claim=value every token must carry, e.g. groups=platform-admins or roles=admin; else 403',
  }),
  setting({
    key: 'tenantClaim',
    env: 'PLATFORM_TENANT_CLAIM',
    flag: '--tenant-claim',
    default: '',
    parse: parseClaimName,
    help: "claim naming the caller's tenants; empty: everyone in tenant default",
  }),
  setting({
    key: 'adminClaim',
    env: 'PLATFORM_ADMIN_CLAIM',
    flag: '--admin-claim',
    default: '',
    parse: parseRequiredClaim,
    help: 'claim=value of admins, who act in every tenant; empty: no admins',
  }),
  setting({
    key: 'readonlyClaim',
    env: 'PLATFORM_READONLY_CLAIM',
    flag: '--readonly-claim',
    default: '',
    parse: parseRequiredClaim,
    help: 'claim=value of read-only callers (403 on every write); empty: none',
  }),
  setting({
    key: 'consoleClientId',
    env: 'PLATFORM_CONSOLE_CLIENT_ID',
    flag: '--console-client-id',
    default: '',
    parse: anyText,
    help: 'public OAuth client id the web console signs in with; empty: no sign-in',
  }),
  setting({
    key: 'consoleScopes',
    env: 'PLATFORM_CONSOLE_SCOPES',
    flag: '--console-scopes',
    default: 'openid offline_access',
    parse: parseScopes,
    help: 'scopes the console asks for, space-separated; openid required',
  }),
  setting({
    key: 'consoleDir',
    env: 'PLATFORM_CONSOLE_DIR',
    flag: '--console-dir',
    default: '',
    parse: anyText,
    help: 'directory of the built web console, served at /; empty: dist/console',
  }),
  setting({
    key: 'kubeconfig',
    env: 'PLATFORM_KUBECONFIG',
    flag: '--kubeconfig',
    default: '',
    parse: anyText,
    help: 'kubeconfig file; empty: in-cluster account, KUBECONFIG or ~/.kube/config',
  }),
  setting({
    key: 'runtime',
    env: 'PLATFORM_RUNTIME',
    flag: '--runtime',
    default: 'auto',
    parse: parseRuntime,
    help: 'where builds and deployments run: cluster, local or auto',
  }),
  setting({
    key: 'maxTenantBuilds',
    env: 'PLATFORM_MAX_TENANT_BUILDS',
    flag: '--max-tenant-builds',
    default: '6',
    parse: integerUpTo(1000),
    help: 'builds one tenant may have running and queued at once, then 429',
  }),
  setting({
    key: 'localBuilds',
    env: 'PLATFORM_LOCAL_BUILDS',
    flag: '--local-builds',
    default: '2',
    parse: integerUpTo(64),
    help: 'local runtime: builds running at once; more wait in order',
  }),
  setting({
    key: 'localWorker',
    env: 'PLATFORM_LOCAL_WORKER',
    flag: '--local-worker',
    default: '',
    parse: anyText,
    help: 'local runtime: the worker binary; empty: the build in .cache/worker',
  }),
  setting({
    key: 'localCacheDir',
    env: 'PLATFORM_LOCAL_CACHE_DIR',
    flag: '--local-cache-dir',
    default: '',
    parse: anyText,
    help: "local runtime: the worker's compiled components; empty: the data dir's",
  }),
  setting({
    key: 'localToolchainsDir',
    env: 'PLATFORM_LOCAL_TOOLCHAINS_DIR',
    flag: '--local-toolchains-dir',
    default: '',
    parse: anyText,
    help: "local runtime: Go and the rust root the first builds prepare; empty: the data dir's",
  }),
  setting({
    key: 'localGoProxy',
    env: 'PLATFORM_LOCAL_GO_PROXY',
    flag: '--local-go-proxy',
    default: 'https://proxy.golang.org',
    parse: parseHttpUrl,
    help: 'local runtime: the Go module proxy a machine without Go fetches the pinned Go from',
  }),
  setting({
    key: 'localAllowPrivateOutbound',
    env: 'PLATFORM_LOCAL_ALLOW_PRIVATE_OUTBOUND',
    flag: '--local-allow-private-outbound',
    default: '',
    parse: parseCidrList,
    help: 'local runtime: private ranges (CIDR) functions may reach; none',
  }),
  setting({
    key: 'localWorkerThreads',
    env: 'PLATFORM_LOCAL_WORKER_THREADS',
    flag: '--local-worker-threads',
    default: '1',
    parse: integerUpTo(256),
    help: "local runtime: the worker's threads serving requests, 1 to 256",
  }),
  setting({
    key: 'localMaxConcurrentRequests',
    env: 'PLATFORM_LOCAL_MAX_CONCURRENT_REQUESTS',
    flag: '--local-max-concurrent-requests',
    default: '100',
    parse: integerUpTo(1000),
    help: 'local runtime: default and largest concurrency.maxRunning of an application, 1 to 1000',
  }),
  setting({
    key: 'localMaxQueuedRequests',
    env: 'PLATFORM_LOCAL_MAX_QUEUED_REQUESTS',
    flag: '--local-max-queued-requests',
    default: '100',
    parse: integerFromZeroTo(10_000),
    help: 'local runtime: default and largest concurrency.maxQueued (requests waiting; more get 429)',
  }),
  setting({
    key: 'localMemoryBudgetBytes',
    env: 'PLATFORM_LOCAL_MEMORY_BUDGET',
    flag: '--local-memory-budget',
    default: '',
    parse: parseMemoryBudget,
    help: "local runtime: all functions' memory together (quantity, 16Mi+); empty: half the machine's",
  }),
  setting({
    key: 'localIdleTimeoutMs',
    env: 'PLATFORM_LOCAL_IDLE_TIMEOUT',
    flag: '--local-idle-timeout',
    default: '5m',
    parse: parseIdleTimeout,
    help: 'local runtime: unload an application idle this long; 0: never',
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
    key: 'prometheusUrl',
    env: 'PLATFORM_PROMETHEUS_URL',
    flag: '--prometheus-url',
    default: '',
    parse: (text) => withoutTrailingSlash(parseHttpUrl(text)),
    help: "Prometheus HTTP API base URL; empty: the control plane's own series (metrics/)",
    secret: true,
  }),
  setting({
    key: 'prometheusTimeoutMs',
    env: 'PLATFORM_PROMETHEUS_TIMEOUT',
    flag: '--prometheus-timeout',
    default: '10s',
    parse: parseTimerDuration,
    help: 'how long one query_range may take (also sent to Prometheus as its timeout); then 503',
  }),
  setting({
    key: 'metricsRateWindowMs',
    env: 'PLATFORM_METRICS_RATE_WINDOW',
    flag: '--metrics-rate-window',
    default: '1m',
    parse: parseRateWindow,
    help: 'shortest rate() window, at least 1s (four scrape intervals or more)',
  }),
  setting({
    key: 'metricsRetentionMs',
    env: 'PLATFORM_METRICS_RETENTION',
    flag: '--metrics-retention',
    default: '24h',
    parse: parseRetention,
    help: 'no --prometheus-url: keep series this long in the data directory (1h-720h)',
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
    key: 'maxArchiveBytes',
    env: 'PLATFORM_MAX_ARCHIVE_BYTES',
    flag: '--max-archive-bytes',
    default: '8MiB',
    parse: parsePositiveBytes,
    help: "largest source: an upload's compressed bytes, and the files' total unpacked size",
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
    key: 'imageRepository',
    env: 'PLATFORM_IMAGE_REPOSITORY',
    flag: '--image-repository',
    default: '',
    parse: parseImageRepository,
    help: 'registry and path builds push to; empty: builds answer 503',
  }),
  setting({
    key: 'imagePullRepository',
    env: 'PLATFORM_IMAGE_PULL_REPOSITORY',
    flag: '--image-pull-repository',
    default: '',
    parse: parseImageRepository,
    help: 'where the nodes pull built images from, if not --image-repository',
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
    key: 'builderRegistrySecret',
    env: 'PLATFORM_BUILDER_REGISTRY_SECRET',
    flag: '--builder-registry-secret',
    default: '',
    parse: anyText,
    help: 'dockerconfigjson Secret with the push credentials of --image-repository',
  }),
  setting({
    key: 'registryInsecure',
    env: 'PLATFORM_REGISTRY_INSECURE',
    flag: '--registry-insecure',
    default: 'false',
    parse: parseBoolean,
    help: 'the registry of --image-repository speaks plain HTTP',
  }),
  setting({
    key: 'registryTokenKey',
    env: 'PLATFORM_REGISTRY_TOKEN_KEY',
    flag: '--registry-token-key',
    default: '',
    parse: anyText,
    help: "PEM key and certificate: serve the registry's tokens; empty: off",
  }),
  setting({
    key: 'registryTokenService',
    env: 'PLATFORM_REGISTRY_TOKEN_SERVICE',
    flag: '--registry-token-service',
    default: 'registry',
    parse: anyText,
    help: "with --registry-token-key: the registry's auth.token.service",
  }),
  setting({
    key: 'registryPullCredentialTtlMs',
    env: 'PLATFORM_REGISTRY_PULL_CREDENTIAL_TTL',
    flag: '--registry-pull-credential-ttl',
    default: '24h',
    parse: parseCredentialTtl,
    help: "with --registry-token-key: life of a tenant's pull Secret, renewed at half of it",
  }),
  setting({
    key: 'buildTimeoutMs',
    env: 'PLATFORM_BUILD_TIMEOUT',
    flag: '--build-timeout',
    default: '15m',
    parse: parseSeconds,
    help: "the build Job's activeDeadlineSeconds; past it the build fails (DeadlineExceeded: ...)",
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
    key: 'replicas',
    env: 'PLATFORM_REPLICAS',
    flag: '--replicas',
    default: '1',
    parse: integerUpTo(100),
    help: 'spec.replicas of every SpinApp (1 to 100)',
  }),
  setting({
    key: 'resyncIntervalMs',
    env: 'PLATFORM_RESYNC_INTERVAL',
    flag: '--resync-interval',
    default: '30s',
    parse: parseSeconds,
    help: 'how often every deployment is compared with what should run, and applied again where it differs',
  }),
  setting({
    key: 'resourcePolicy',
    env: 'PLATFORM_RESOURCE_POLICY',
    flag: '--resource-policy',
    default: 'open',
    parse: parseResourcePolicy,
    help: 'how the --resource-* values bind applications: open, max or forced',
  }),
  setting({
    key: 'resourceCpuRequest',
    env: 'PLATFORM_RESOURCE_CPU_REQUEST',
    flag: '--resource-cpu-request',
    default: '',
    parse: parseOptionalQuantity,
    help: "the SpinApps' CPU request (Kubernetes quantity); empty: none",
  }),
  setting({
    key: 'resourceCpuLimit',
    env: 'PLATFORM_RESOURCE_CPU_LIMIT',
    flag: '--resource-cpu-limit',
    default: '',
    parse: parseOptionalQuantity,
    help: "the SpinApps' CPU limit under --resource-policy (e.g. 1); empty: none",
  }),
  setting({
    key: 'resourceMemoryRequest',
    env: 'PLATFORM_RESOURCE_MEMORY_REQUEST',
    flag: '--resource-memory-request',
    default: '',
    parse: parseOptionalQuantity,
    help: "the SpinApps' memory request under --resource-policy (e.g. 64Mi); empty: none",
  }),
  setting({
    key: 'resourceMemoryLimit',
    env: 'PLATFORM_RESOURCE_MEMORY_LIMIT',
    flag: '--resource-memory-limit',
    default: '',
    parse: parseOptionalQuantity,
    help: "the SpinApps' memory limit under --resource-policy (e.g. 256Mi); empty: none",
  }),
  setting({
    key: 'resourceMaxMemory',
    env: 'PLATFORM_RESOURCE_MAX_MEMORY',
    flag: '--resource-max-memory',
    default: '512Mi',
    parse: parseOptionalQuantity,
    help: 'the largest memory request or limit of any application, in every policy mode; empty: none',
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
  setting({
    key: 'secretKeyFile',
    env: 'PLATFORM_SECRET_KEY_FILE',
    flag: '--secret-key-file',
    default: '',
    parse: anyText,
    help: "key file that encrypts secret variables at rest; empty: the data dir's",
  }),
  setting({
    key: 'invokeTimeoutMs',
    env: 'PLATFORM_INVOKE_TIMEOUT',
    flag: '--invoke-timeout',
    default: '30s',
    parse: parseTimerDuration,
    help: 'how long invoke waits for the function; past it the result is 504',
  }),
  setting({
    key: 'headersTimeoutMs',
    env: 'PLATFORM_HEADERS_TIMEOUT',
    flag: '--headers-timeout',
    default: '10s',
    parse: parseTimerDuration,
    help: "a request's headers must be complete within this, else 408",
  }),
  setting({
    key: 'minBodyBytes',
    env: 'PLATFORM_MIN_BODY_BYTES',
    flag: '--min-body-bytes',
    default: '1KiB',
    parse: parsePositiveBytes,
    help: 'least a request body must bring per --body-rate-window, else closed',
  }),
  setting({
    key: 'bodyRateWindowMs',
    env: 'PLATFORM_BODY_RATE_WINDOW',
    flag: '--body-rate-window',
    default: '10s',
    parse: parseTimerDuration,
    help: 'the window --min-body-bytes is counted over',
  }),
  setting({
    key: 'keepAliveTimeoutMs',
    env: 'PLATFORM_KEEP_ALIVE_TIMEOUT',
    flag: '--keep-alive-timeout',
    default: '72s',
    parse: parseTimerDuration,
    help: 'an idle keep-alive connection is closed after this',
  }),
  setting({
    key: 'maxConnections',
    env: 'PLATFORM_MAX_CONNECTIONS',
    flag: '--max-connections',
    default: '1000',
    parse: integerUpTo(1_000_000),
    help: 'most connections open at once; more are closed as they are accepted (1 to 1000000)',
  }),
  setting({
    key: 'shutdownDelayMs',
    env: 'PLATFORM_SHUTDOWN_DELAY',
    flag: '--shutdown-delay',
    default: '0s',
    parse: parseShutdownDelay,
    help: 'on SIGTERM, how long /readyz answers 503 before the listener closes',
  }),
  setting({
    key: 'logLevel',
    env: 'PLATFORM_LOG_LEVEL',
    flag: '--log-level',
    default: 'info',
    parse: parseLogLevel,
    help: 'pino level, silent to turn logs off',
  }),
]

// Fails to compile when a ControlConfig field has no row in the table.
type MissingSettings = Exclude<keyof ControlConfig, (typeof settings)[number]['key']>
const everySettingListed: [MissingSettings] extends [never] ? true : MissingSettings = true
void everySettingListed

export function parseConfig(argv: string[], env: Record<string, string | undefined>): ControlConfig {
  const config = readSettings(settings, argv, env)
  if (!config.devInsecureSkipAuth && config.oidcIssuer === '') {
    throw new ConfigError('--oidc-issuer (PLATFORM_OIDC_ISSUER) is required unless --dev-insecure-skip-auth is set')
  }
  if (config.devInsecureSkipAuth) {
    config.addr = unauthenticatedAddress(config.addr, settingGiven(settings, 'addr', argv, env), {
      allowed: config.devInsecureListenAnywhere,
      flag: '--dev-insecure-listen-anywhere',
      authFlag: '--dev-insecure-skip-auth',
    })
  }
  if (config.jwksMinRefreshMs > config.jwksMaxRefreshMs) {
    throw new ConfigError(
      `--jwks-min-refresh (PLATFORM_JWKS_MIN_REFRESH) ${formatDuration(config.jwksMinRefreshMs)} must be at most --jwks-max-refresh (PLATFORM_JWKS_MAX_REFRESH) ${formatDuration(config.jwksMaxRefreshMs)}`,
    )
  }
  checkResourcePolicy(config)
  if (config.publicBaseUrl !== '' && config.publicRoute === 'httproute' && config.gateway === '') {
    throw new ConfigError(
      '--public-base-url (PLATFORM_PUBLIC_BASE_URL) with --public-route httproute needs --gateway (PLATFORM_GATEWAY), or --public-route ingress or none',
    )
  }
  return config
}

function checkResourcePolicy(config: ControlConfig): void {
  const pairs = [
    ['--resource-cpu-request', config.resourceCpuRequest, '--resource-cpu-limit', config.resourceCpuLimit],
    ['--resource-memory-request', config.resourceMemoryRequest, '--resource-memory-limit', config.resourceMemoryLimit],
  ] as const
  for (const [requestFlag, request, limitFlag, limit] of pairs) {
    const requested = quantityValue(request)
    const limited = quantityValue(limit)
    if (requested !== null && limited !== null && compareQuantities(requested, limited) > 0)
      throw new ConfigError(`${requestFlag} ${request} is above ${limitFlag} ${limit}`)
  }
  const maxMemory = quantityValue(config.resourceMaxMemory)
  for (const [flag, value] of [
    ['--resource-memory-request', config.resourceMemoryRequest],
    ['--resource-memory-limit', config.resourceMemoryLimit],
  ] as const) {
    const given = quantityValue(value)
    if (given !== null && maxMemory !== null && compareQuantities(given, maxMemory) > 0)
      throw new ConfigError(`${flag} ${value} is above --resource-max-memory ${config.resourceMaxMemory}`)
  }
  const any = [
    config.resourceCpuRequest,
    config.resourceCpuLimit,
    config.resourceMemoryRequest,
    config.resourceMemoryLimit,
  ].some((value) => value !== '')
  if (config.resourcePolicy !== 'open' && !any)
    throw new ConfigError(
      `--resource-policy ${config.resourcePolicy} (PLATFORM_RESOURCE_POLICY) needs at least one of --resource-cpu-request, --resource-cpu-limit, --resource-memory-request, --resource-memory-limit`,
    )
}

export const controlUsage = (): string => usage(settings)
