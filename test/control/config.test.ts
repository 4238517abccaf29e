// The control plane's settings table: defaults, environment and flags, and every value that
// must be refused (the process turns those into exit code 2; control-process checks that).
import t from 'tap'
import { controlUsage, parseConfig, settings } from '@session-relay/control/config'
import { ConfigError } from '@session-relay/common/config/settings'
import { settings as builderSettings } from '@session-relay/builders/config'

const SKIP = ['--dev-insecure-skip-auth']

t.test('defaults (decisions.md, Control plane settings)', async (t) => {
  t.same(parseConfig(SKIP, {}), {
    addr: { host: '127.0.0.1', port: 8081 },
    databaseUrl: '',
    dataDir: './data/control',
    oidcIssuer: '',
    oidcAudience: '',
    jwksMinRefreshMs: 60_000,
    jwksMaxRefreshMs: 3_600_000,
    devInsecureSkipAuth: true,
    devInsecureListenAnywhere: false,
    requiredClaim: null,
    tenantClaim: '',
    adminClaim: null,
    readonlyClaim: null,
    consoleClientId: '',
    consoleScopes: 'openid offline_access',
    consoleDir: '',
    kubeconfig: '',
    runtime: 'auto',
    maxTenantBuilds: 6,
    localBuilds: 2,
    localWorker: '',
    localCacheDir: '',
    localAllowPrivateOutbound: [],
    localIdleTimeoutMs: 300_000,
    localWorkerThreads: 1,
    localBaselineFirst: true,
    localMaxConcurrentRequests: 100,
    localMaxQueuedRequests: 100,
    localMemoryBudgetBytes: null,
    localToolchainsDir: '',
    localGoProxy: 'https://proxy.golang.org',
    rustRoot: '',
    namespace: 'default',
    prometheusUrl: '',
    prometheusTimeoutMs: 10_000,
    metricsRateWindowMs: 60_000,
    metricsRetentionMs: 86_400_000,
    tracesKept: 100,
    publicBaseUrl: '',
    maxArchiveBytes: 8 * 1024 * 1024,
    builderImages: {
      go: 'registry.example.com/session-relay/builder-go:0.1.0',
      js: 'registry.example.com/session-relay/builder-js:0.1.0',
      ts: 'registry.example.com/session-relay/builder-js:0.1.0',
      rust: 'registry.example.com/session-relay/builder-rust:0.1.0',
    },
    imageRepository: '',
    imagePullRepository: '',
    imagePullSecret: '',
    registryInsecure: false,
    registryTokenKey: '',
    registryTokenService: 'registry',
    registryPullCredentialTtlMs: 24 * 3_600_000,
    dockerConfig: null,
    builderRegistrySecret: '',
    buildTimeoutMs: 15 * 60_000,
    buildTtlMs: 3_600_000,
    buildCpu: '1',
    buildMemory: '2Gi',
    buildEphemeralStorage: '4Gi',
    replicas: 1,
    resourcePolicy: 'open',
    resourceCpuRequest: '',
    resourceCpuLimit: '',
    resourceMemoryRequest: '',
    resourceMemoryLimit: '',
    resourceMaxMemory: '512Mi',
    publicRoute: 'httproute',
    gateway: '',
    ingressClass: '',
    secretKeyFile: '',
    invokeTimeoutMs: 30_000,
    resyncIntervalMs: 30_000,
    headersTimeoutMs: 10_000,
    minBodyBytes: 1024,
    bodyRateWindowMs: 10_000,
    keepAliveTimeoutMs: 72_000,
    maxConnections: 1000,
    shutdownDelayMs: 0,
    logLevel: 'info',
  })
})

t.test('every setting from the environment; a flag wins over its variable', async (t) => {
  const env = {
    PLATFORM_ADDR: '127.0.0.1:9000',
    PLATFORM_DATABASE_URL: 'postgres://u:p@db:5432/platform',
    PLATFORM_DATA_DIR: '/var/lib/control',
    PLATFORM_OIDC_ISSUER: 'https://idp.example.com/realms/x',
    PLATFORM_OIDC_AUDIENCE: 'platform-cli',
    PLATFORM_JWKS_MIN_REFRESH: '30s',
    PLATFORM_JWKS_MAX_REFRESH: '2h',
    PLATFORM_DEV_INSECURE_SKIP_AUTH: 'false',
    PLATFORM_REQUIRED_CLAIM: 'groups=platform-admins',
    PLATFORM_TENANT_CLAIM: 'groups',
    PLATFORM_ADMIN_CLAIM: 'roles=admin',
    PLATFORM_READONLY_CLAIM: 'roles=viewer',
    PLATFORM_CONSOLE_CLIENT_ID: 'platform-console',
    PLATFORM_CONSOLE_SCOPES: 'openid email offline_access',
    PLATFORM_CONSOLE_DIR: '/srv/console',
    PLATFORM_KUBECONFIG: '/etc/kube/config',
    PLATFORM_RUNTIME: 'cluster',
    PLATFORM_LOCAL_BUILDS: '4',
    PLATFORM_LOCAL_WORKER: '/opt/worker',
    PLATFORM_LOCAL_CACHE_DIR: '/var/cache/worker',
    PLATFORM_LOCAL_ALLOW_PRIVATE_OUTBOUND: '10.0.0.0/8, ::1/128,192.168.1.1',
    PLATFORM_LOCAL_IDLE_TIMEOUT: '0',
    PLATFORM_LOCAL_WORKER_THREADS: '4',
    PLATFORM_LOCAL_BASELINE_FIRST: 'false',
    PLATFORM_LOCAL_MAX_CONCURRENT_REQUESTS: '8',
    PLATFORM_LOCAL_MAX_QUEUED_REQUESTS: '0',
    PLATFORM_LOCAL_MEMORY_BUDGET: '8Gi',
    PLATFORM_LOCAL_TOOLCHAINS_DIR: '/var/lib/platform/toolchains',
    PLATFORM_LOCAL_GO_PROXY: 'http://127.0.0.1:3000',
    PLATFORM_MAX_TENANT_BUILDS: '9',
    PLATFORM_NAMESPACE: 'apps',
    PLATFORM_PROMETHEUS_URL: 'http://prometheus:9090/',
    PLATFORM_PROMETHEUS_TIMEOUT: '2.5s',
    PLATFORM_METRICS_RATE_WINDOW: '2m',
    PLATFORM_METRICS_RETENTION: '6h',
    PLATFORM_TRACES_KEPT: '0',
    PLATFORM_PUBLIC_BASE_URL: 'https://apps.example.com/',
    PLATFORM_MAX_ARCHIVE_BYTES: '16MiB',
    PLATFORM_BUILDER_IMAGES: 'go=ghcr.io/acme/build-go:1, rust=ghcr.io/acme/build-rust@sha256:abc',
    PLATFORM_IMAGE_REPOSITORY: 'registry.example.com:5000/apps/',
    PLATFORM_IMAGE_PULL_REPOSITORY: 'localhost:30500/apps',
    PLATFORM_IMAGE_PULL_SECRET: 'registry-pull',
    PLATFORM_REGISTRY_INSECURE: 'true',
    PLATFORM_REGISTRY_TOKEN_KEY: '/etc/registry-token/token.pem',
    PLATFORM_REGISTRY_TOKEN_SERVICE: 'registry.example.com',
    PLATFORM_REGISTRY_PULL_CREDENTIAL_TTL: '6h',
    PLATFORM_BUILDER_REGISTRY_SECRET: 'regcred',
    PLATFORM_BUILD_TIMEOUT: '20m',
    PLATFORM_BUILD_TTL: '30m',
    PLATFORM_BUILD_CPU: '500m',
    PLATFORM_BUILD_MEMORY: '1.5Gi',
    PLATFORM_BUILD_EPHEMERAL_STORAGE: '10Gi',
    PLATFORM_REPLICAS: '3',
    PLATFORM_RESOURCE_POLICY: 'max',
    PLATFORM_RESOURCE_CPU_REQUEST: '100m',
    PLATFORM_RESOURCE_CPU_LIMIT: '1',
    PLATFORM_RESOURCE_MEMORY_REQUEST: '64Mi',
    PLATFORM_RESOURCE_MEMORY_LIMIT: '0.5Gi',
    PLATFORM_RESOURCE_MAX_MEMORY: '1Gi',
    PLATFORM_PUBLIC_ROUTE: 'httproute',
    PLATFORM_GATEWAY: 'gateways/public',
    PLATFORM_INGRESS_CLASS: 'nginx',
    PLATFORM_SECRET_KEY_FILE: '/etc/control/secret.key',
    PLATFORM_INVOKE_TIMEOUT: '10s',
    PLATFORM_RESYNC_INTERVAL: '2m',
    PLATFORM_HEADERS_TIMEOUT: '5s',
    PLATFORM_MIN_BODY_BYTES: '4KiB',
    PLATFORM_BODY_RATE_WINDOW: '20s',
    PLATFORM_KEEP_ALIVE_TIMEOUT: '30s',
    PLATFORM_MAX_CONNECTIONS: '500',
    PLATFORM_LOG_LEVEL: 'debug',
    DOCKER_CONFIG: '/etc/registry-auth',
    RUST_ROOT: '/opt/rust-wasm',
  }
  t.same(parseConfig([], env), {
    addr: { host: '127.0.0.1', port: 9000 },
    databaseUrl: 'postgres://u:p@db:5432/platform',
    dataDir: '/var/lib/control',
    oidcIssuer: 'https://idp.example.com/realms/x',
    oidcAudience: 'platform-cli',
    jwksMinRefreshMs: 30_000,
    jwksMaxRefreshMs: 7_200_000,
    devInsecureSkipAuth: false,
    devInsecureListenAnywhere: false,
    requiredClaim: { name: 'groups', value: 'platform-admins' },
    tenantClaim: 'groups',
    adminClaim: { name: 'roles', value: 'admin' },
    readonlyClaim: { name: 'roles', value: 'viewer' },
    consoleClientId: 'platform-console',
    consoleScopes: 'openid email offline_access',
    consoleDir: '/srv/console',
    kubeconfig: '/etc/kube/config',
    runtime: 'cluster',
    maxTenantBuilds: 9,
    localBuilds: 4,
    localWorker: '/opt/worker',
    localCacheDir: '/var/cache/worker',
    localAllowPrivateOutbound: ['10.0.0.0/8', '::1/128', '192.168.1.1'],
    localIdleTimeoutMs: 0,
    localWorkerThreads: 4,
    localBaselineFirst: false,
    localMaxConcurrentRequests: 8,
    localMaxQueuedRequests: 0,
    localMemoryBudgetBytes: 8 * 2 ** 30,
    localToolchainsDir: '/var/lib/platform/toolchains',
    localGoProxy: 'http://127.0.0.1:3000',
    rustRoot: '/opt/rust-wasm',
    namespace: 'apps',
    prometheusUrl: 'http://prometheus:9090',
    prometheusTimeoutMs: 2_500,
    metricsRateWindowMs: 120_000,
    metricsRetentionMs: 21_600_000,
    tracesKept: 0,
    publicBaseUrl: 'https://apps.example.com',
    maxArchiveBytes: 16 * 1024 * 1024,
    builderImages: { go: 'ghcr.io/acme/build-go:1', js: '', ts: '', rust: 'ghcr.io/acme/build-rust@sha256:abc' },
    imageRepository: 'registry.example.com:5000/apps',
    imagePullRepository: 'localhost:30500/apps',
    imagePullSecret: 'registry-pull',
    registryInsecure: true,
    registryTokenKey: '/etc/registry-token/token.pem',
    registryTokenService: 'registry.example.com',
    registryPullCredentialTtlMs: 6 * 3_600_000,
    dockerConfig: '/etc/registry-auth',
    builderRegistrySecret: 'regcred',
    buildTimeoutMs: 20 * 60_000,
    buildTtlMs: 30 * 60_000,
    buildCpu: '500m',
    buildMemory: '1.5Gi',
    buildEphemeralStorage: '10Gi',
    replicas: 3,
    resourcePolicy: 'max',
    resourceCpuRequest: '100m',
    resourceCpuLimit: '1',
    resourceMemoryRequest: '64Mi',
    resourceMemoryLimit: '0.5Gi',
    resourceMaxMemory: '1Gi',
    publicRoute: 'httproute',
    gateway: 'gateways/public',
    ingressClass: 'nginx',
    secretKeyFile: '/etc/control/secret.key',
    invokeTimeoutMs: 10_000,
    resyncIntervalMs: 120_000,
    headersTimeoutMs: 5_000,
    minBodyBytes: 4096,
    bodyRateWindowMs: 20_000,
    keepAliveTimeoutMs: 30_000,
    maxConnections: 500,
    shutdownDelayMs: 0,
    logLevel: 'debug',
  })
  const flags = parseConfig(
    ['--addr=:7000', '--namespace', 'other', '--max-archive-bytes', '1024', '--required-claim', 'roles = admin '],
    env,
  )
  t.same(flags.addr, { host: '', port: 7000 }, '--addr=value form')
  t.equal(flags.namespace, 'other')
  t.equal(flags.maxArchiveBytes, 1024)
  t.same(flags.requiredClaim, { name: 'roles', value: 'admin' }, 'spaces around the parts are trimmed')
  t.equal(parseConfig(['--dev-insecure-skip-auth=false', '--oidc-issuer', 'http://idp'], {}).devInsecureSkipAuth, false)
  t.equal(
    parseConfig(['--oidc-issuer', 'http://idp'], { PLATFORM_DEV_INSECURE_SKIP_AUTH: 'true' }).devInsecureSkipAuth,
    true,
  )
  t.equal(
    parseConfig(['--oidc-issuer', 'http://idp', '--required-claim', 'email=a=b'], {}).requiredClaim?.value,
    'a=b',
    'only the first = splits',
  )
})

t.test('values that are refused: ConfigError naming the setting', async (t) => {
  const cases: Array<[string, string[], Record<string, string>, RegExp]> = [
    [
      'no issuer and no skip-auth',
      [],
      {},
      /--oidc-issuer \(PLATFORM_OIDC_ISSUER\) is required unless --dev-insecure-skip-auth is set/,
    ],
    ['an issuer that is no URL', ['--oidc-issuer', 'idp.example.com'], {}, /"idp.example.com" for --oidc-issuer/],
    ['an unknown flag', [...SKIP, '--port', '80'], {}, /unknown flag --port/],
    ['a bad address', [...SKIP, '--addr', '8081'], {}, /"8081" for --addr/],
    [
      'a database URL of another kind',
      [...SKIP, '--database-url', 'mysql://root:hunter2@db/x'],
      {},
      /invalid value for --database-url: expected a postgres:\/\/ or postgresql:\/\/ URL/,
    ],
    ['a zero archive limit', [...SKIP, '--max-archive-bytes', '0'], {}, /--max-archive-bytes: must be greater than 0/],
    [
      'a zero connection cap',
      [...SKIP, '--max-connections', '0'],
      {},
      /"0" for --max-connections: expected an integer from 1 to 1000000/,
    ],
    ['a zero minimum body rate', [...SKIP, '--min-body-bytes', '0'], {}, /--min-body-bytes: must be greater than 0/],
    [
      'a zero headers timeout',
      [...SKIP],
      { PLATFORM_HEADERS_TIMEOUT: '0s' },
      /PLATFORM_HEADERS_TIMEOUT: must be greater than 0/,
    ],
    [
      'an archive limit in MB',
      [...SKIP],
      { PLATFORM_MAX_ARCHIVE_BYTES: '8MB' },
      /"8MB" for PLATFORM_MAX_ARCHIVE_BYTES/,
    ],
    ['a claim without a value', [...SKIP, '--required-claim', 'groups'], {}, /--required-claim: expected claim=value/],
    ['a claim without a name', [...SKIP, '--required-claim', '=admin'], {}, /expected claim=value/],
    ['an admin claim without a value', [...SKIP, '--admin-claim', 'roles'], {}, /--admin-claim: expected claim=value/],
    [
      'a read-only claim without a value',
      [...SKIP],
      { PLATFORM_READONLY_CLAIM: 'roles' },
      /PLATFORM_READONLY_CLAIM: expected claim=value/,
    ],
    [
      'a tenant claim given as claim=value',
      [...SKIP, '--tenant-claim', 'groups=a'],
      {},
      /--tenant-claim: expected the name of a claim/,
    ],
    ['an upper-case namespace', [...SKIP, '--namespace', 'Apps'], {}, /"Apps" for --namespace/],
    ['a Prometheus URL without a scheme', [...SKIP, '--prometheus-url', 'prometheus:9090'], {}, /--prometheus-url/],
    [
      'a zero Prometheus timeout',
      [...SKIP, '--prometheus-timeout', '0s'],
      {},
      /--prometheus-timeout: must be greater than 0/,
    ],
    [
      'a Prometheus timeout without a unit',
      [...SKIP],
      { PLATFORM_PROMETHEUS_TIMEOUT: '10' },
      /PLATFORM_PROMETHEUS_TIMEOUT/,
    ],
    [
      'a rate window under 1s',
      [...SKIP, '--metrics-rate-window', '500ms'],
      {},
      /--metrics-rate-window: expected a duration of at least 1s/,
    ],
    [
      'a rate window in fractions of a millisecond',
      [...SKIP, '--metrics-rate-window', '1.0005s'],
      {},
      /--metrics-rate-window: expected a duration of at least 1s in whole milliseconds/,
    ],
    [
      'a metrics retention under an hour',
      [...SKIP, '--metrics-retention', '30m'],
      {},
      /--metrics-retention: expected a duration from 1h to 720h/,
    ],
    ['a metrics retention over 30 days', [...SKIP, '--metrics-retention', '721h'], {}, /--metrics-retention/],
    [
      'more traces kept than 1000',
      [...SKIP, '--traces-kept', '1001'],
      {},
      /--traces-kept: expected an integer from 0 to 1000/,
    ],
    [
      'a public base URL without a scheme',
      [...SKIP],
      { PLATFORM_PUBLIC_BASE_URL: 'apps.example.com' },
      /PLATFORM_PUBLIC_BASE_URL/,
    ],
    [
      'skip-auth that is no boolean',
      [],
      { PLATFORM_DEV_INSECURE_SKIP_AUTH: 'yes' },
      /"yes" for PLATFORM_DEV_INSECURE_SKIP_AUTH/,
    ],
    [
      'a builder for an unknown language',
      [...SKIP, '--builder-images', 'python=builders/py:1'],
      {},
      /--builder-images: unknown language "python"/,
    ],
    [
      'a builder without an image',
      [...SKIP, '--builder-images', 'go='],
      {},
      /--builder-images: expected language=image pairs/,
    ],
    [
      'an image repository with a tag',
      [...SKIP, '--image-repository', 'registry.example.com/apps:1'],
      {},
      /--image-repository: expected a registry and path/,
    ],
    ['a zero build timeout', [...SKIP, '--build-timeout', '0s'], {}, /--build-timeout: must be greater than 0/],
    ['a build TTL that is no duration', [...SKIP, '--build-ttl', '1 day'], {}, /"1 day" for --build-ttl/],
    ['a CPU that is no quantity', [...SKIP, '--build-cpu', 'two'], {}, /--build-cpu: expected a Kubernetes quantity/],
    ['memory in GB spelled wrong', [...SKIP], { PLATFORM_BUILD_MEMORY: '2GB' }, /"2GB" for PLATFORM_BUILD_MEMORY/],
    [
      'build disk that is no quantity',
      [...SKIP, '--build-ephemeral-storage', '4 GiB'],
      {},
      /--build-ephemeral-storage: expected a Kubernetes quantity/,
    ],
    [
      'a pull credential living seconds',
      [...SKIP, '--registry-pull-credential-ttl', '30s'],
      {},
      /--registry-pull-credential-ttl: expected a duration of at least 10m/,
    ],
    [
      'an unknown runtime',
      [...SKIP, '--runtime', 'docker'],
      {},
      /"docker" for --runtime: expected auto, cluster or local/,
    ],
    [
      'zero local builds',
      [...SKIP],
      { PLATFORM_LOCAL_BUILDS: '0' },
      /PLATFORM_LOCAL_BUILDS: expected an integer from 1 to 64/,
    ],
    [
      'a range that is no CIDR',
      [...SKIP],
      { PLATFORM_LOCAL_ALLOW_PRIVATE_OUTBOUND: '10.0.0.0/8,localhost' },
      /PLATFORM_LOCAL_ALLOW_PRIVATE_OUTBOUND: expected CIDR ranges separated by commas, got "localhost"/,
    ],
    [
      'a negative idle timeout',
      [...SKIP],
      { PLATFORM_LOCAL_IDLE_TIMEOUT: '-1s' },
      /PLATFORM_LOCAL_IDLE_TIMEOUT: must be greater than 0/,
    ],
    ['a prefix too long', [...SKIP], { PLATFORM_LOCAL_ALLOW_PRIVATE_OUTBOUND: '10.0.0.0/33' }, /expected CIDR ranges/],
    [
      'no turn for an application',
      [...SKIP, '--local-max-concurrent-requests', '0'],
      {},
      /--local-max-concurrent-requests: expected an integer from 1 to 1000/,
    ],
    [
      "a queue past the worker's",
      [...SKIP],
      { PLATFORM_LOCAL_MAX_QUEUED_REQUESTS: '10001' },
      /PLATFORM_LOCAL_MAX_QUEUED_REQUESTS: expected an integer from 0 to 10000/,
    ],
    [
      'a platform memory limit above the largest memory',
      [...SKIP, '--resource-memory-limit', '1Gi'],
      {},
      /--resource-memory-limit 1Gi is above --resource-max-memory 512Mi/,
    ],
    [
      'a memory budget below 16Mi',
      [...SKIP, '--local-memory-budget', '15Mi'],
      {},
      /--local-memory-budget: expected a memory quantity of at least 16Mi/,
    ],
    [
      'a memory budget that is no quantity',
      [...SKIP],
      { PLATFORM_LOCAL_MEMORY_BUDGET: 'lots' },
      /PLATFORM_LOCAL_MEMORY_BUDGET: expected a memory quantity/,
    ],
    [
      'no worker thread',
      [...SKIP, '--local-worker-threads', '0'],
      {},
      /--local-worker-threads: expected an integer from 1 to 256/,
    ],
    [
      'more worker threads than the worker takes',
      [...SKIP],
      { PLATFORM_LOCAL_WORKER_THREADS: '257' },
      /PLATFORM_LOCAL_WORKER_THREADS: expected an integer from 1 to 256/,
    ],
    [
      'a pull secret that is no name',
      [...SKIP, '--image-pull-secret', 'Registry Pull'],
      {},
      /"Registry Pull" for --image-pull-secret: expected a Kubernetes Secret name/,
    ],
    ['zero replicas', [...SKIP, '--replicas', '0'], {}, /--replicas: expected an integer from 1 to 100/],
    [
      'an unknown resource policy',
      [...SKIP, '--resource-policy', 'strict'],
      {},
      /"strict" for --resource-policy: expected open, max or forced/,
    ],
    [
      'a CPU limit that is no quantity',
      [...SKIP],
      { PLATFORM_RESOURCE_CPU_LIMIT: '1 core' },
      /PLATFORM_RESOURCE_CPU_LIMIT: expected a positive Kubernetes quantity/,
    ],
    [
      'a memory request above its limit',
      [...SKIP, '--resource-memory-request', '1Gi', '--resource-memory-limit', '512Mi'],
      {},
      /--resource-memory-request 1Gi is above --resource-memory-limit 512Mi/,
    ],
    [
      'a max policy without values',
      [...SKIP, '--resource-policy', 'max'],
      {},
      /--resource-policy max \(PLATFORM_RESOURCE_POLICY\) needs at least one of/,
    ],
    [
      'an unknown public route kind',
      [...SKIP, '--public-route', 'gateway'],
      {},
      /"gateway" for --public-route: expected httproute, ingress or none/,
    ],
    [
      'HTTPRoutes without a Gateway',
      [...SKIP, '--public-base-url', 'https://fn.example.com'],
      {},
      /--public-route httproute needs --gateway/,
    ],
    ['a Gateway that is no name', [...SKIP, '--gateway', 'a/b/c'], {}, /"a\/b\/c" for --gateway/],
    [
      'a wildcard that is not the first label',
      [...SKIP, '--public-base-url', 'https://fn.*.example.com', '--public-route', 'none'],
      {},
      /--public-base-url: expected "\*" only as the first label/,
    ],
    [
      'a wildcard host with a path',
      [...SKIP, '--public-base-url', 'https://*.fn.example.com/x', '--public-route', 'none'],
      {},
      /expected "\*" only as the first label of the host and no path/,
    ],
    [
      'a public base URL with a query',
      [...SKIP, '--public-base-url', 'https://fn.example.com/?a=1', '--public-route', 'none'],
      {},
      /--public-base-url: expected no query/,
    ],
    ['an invoke timeout without a unit', [...SKIP, '--invoke-timeout', '30'], {}, /"30" for --invoke-timeout/],
    ['an unknown log level', [...SKIP, '--log-level', 'verbose'], {}, /"verbose" for --log-level/],
    [
      'a JWKS refresh floor above its ceiling',
      [...SKIP, '--jwks-min-refresh', '2h'],
      {},
      /--jwks-min-refresh \(PLATFORM_JWKS_MIN_REFRESH\) 2h0m0s must be at most --jwks-max-refresh \(PLATFORM_JWKS_MAX_REFRESH\) 1h0m0s/,
    ],
    [
      'a zero JWKS refresh ceiling',
      [...SKIP, '--jwks-max-refresh', '0s'],
      {},
      /--jwks-max-refresh: must be greater than 0/,
    ],
  ]
  for (const [what, argv, env, message] of cases) {
    const error = refusal(() => parseConfig(argv, env))
    t.type(error, ConfigError, what)
    t.match(error.message, message, `${what}: says what is wrong`)
  }
  const secret = refusal(() => parseConfig([...SKIP], { PLATFORM_DATABASE_URL: 'postgres://user:hunter2@[bad' }))
  t.match(secret.message, /^invalid value for PLATFORM_DATABASE_URL/)
  t.notMatch(secret.message, /hunter2/, 'a refused database URL is not repeated: it may hold a password')
  const prometheus = refusal(() => parseConfig([...SKIP, '--prometheus-url', 'ftp://reader:hunter2@prometheus'], {}))
  t.match(prometheus.message, /^invalid value for --prometheus-url/)
  t.notMatch(prometheus.message, /hunter2/, 'nor a Prometheus URL, which may hold credentials too')
})

function refusal(fn: () => unknown): Error {
  try {
    fn()
  } catch (error) {
    return error as Error
  }
  throw new Error('expected a ConfigError')
}

// The sections' tables (http/settings.ts, cluster/settings.ts, ...) compose into one: a name
// given twice would be read by two sections, or hide one of them from --help.
t.test('the composed table: every key, flag and variable once', async (t) => {
  for (const column of ['key', 'flag', 'env'] as const) {
    const seen = settings.map((row) => String(row[column]))
    t.same(
      seen.filter((name, i) => seen.indexOf(name) !== i),
      [],
      `no ${column} twice`,
    )
  }
  t.equal(settings.length, Object.keys(parseConfig(SKIP, {})).length, 'one row per field of the parsed object')
})

// The builder's own names, read through the table like every other setting (issue 41): the
// local runtime hands them to its builder children, which lose every PLATFORM_ variable.
t.test('DOCKER_CONFIG and RUST_ROOT: the only names outside PLATFORM_, the same as the builder reads', async (t) => {
  const outside = settings.filter((row) => !row.env.startsWith('PLATFORM_'))
  t.same(
    outside.map((row) => [row.env, row.flag]),
    [
      ['DOCKER_CONFIG', '--docker-config'],
      ['RUST_ROOT', '--rust-root'],
    ],
  )
  for (const row of outside) {
    const builder = builderSettings.find((candidate) => candidate.env === row.env)
    t.equal(builder?.flag, row.flag, `${row.env}: the builder's flag too`)
  }
  t.equal(
    parseConfig([...SKIP, '--docker-config', '/run/auth'], { DOCKER_CONFIG: '/etc/auth' }).dockerConfig,
    '/run/auth',
  )
  t.equal(parseConfig(SKIP, { DOCKER_CONFIG: '' }).dockerConfig, null, 'empty: no credentials file')
  t.equal(parseConfig([...SKIP, '--rust-root=/opt/root'], {}).rustRoot, '/opt/root')
  t.match(controlUsage(), '--docker-config, DOCKER_CONFIG\n')
  t.match(controlUsage(), '--rust-root, RUST_ROOT\n')
})

t.test('usage lists every flag with its variable', async (t) => {
  const text = controlUsage()
  for (const row of settings) {
    t.match(text, `${row.flag}, ${row.env}`, row.flag)
  }
  t.match(text, '--addr, PLATFORM_ADDR (default :8081)')
})

// Authentication off hands the API to whoever reaches the port (issue 29, "safe by default").
t.test('with authentication off: loopback by default, another address refused unless said so by name', async (t) => {
  t.same(parseConfig(SKIP, {}).addr, { host: '127.0.0.1', port: 8081 }, 'the default binds loopback')
  t.same(parseConfig([...SKIP, '--addr', '[::1]:9000'], {}).addr, { host: '::1', port: 9000 })
  t.same(parseConfig(SKIP, { PLATFORM_ADDR: '127.0.0.2:0' }).addr, { host: '127.0.0.2', port: 0 })
  for (const [argv, env] of [
    [[...SKIP, '--addr', ':8081'], {}],
    [[...SKIP, '--addr', '0.0.0.0:80'], {}],
    [SKIP, { PLATFORM_ADDR: ':9000' }],
  ] as const) {
    t.throws(
      () => parseConfig([...argv], env),
      {
        message:
          /^--dev-insecure-skip-auth with a listen address that is not loopback \(.+\) would hand the API to anyone who can reach it: .* or set --dev-insecure-listen-anywhere$/,
      },
      argv.join(' '),
    )
  }
  t.same(
    parseConfig([...SKIP, '--addr', ':8081', '--dev-insecure-listen-anywhere'], {}).addr,
    { host: '', port: 8081 },
    'the setting that says so',
  )
  t.same(
    parseConfig(['--oidc-issuer', 'http://idp'], {}).addr,
    { host: '', port: 8081 },
    'with authentication on, every interface as before',
  )
})
