// The local runtime's own settings: its builds, the worker program and its limits, the
// directories it keeps, and where the Go and Rust toolchains come from.
import { anyText, parseBoolean, parseHttpUrl, parseTimerDuration } from '@session-relay/common/config/settings'
import { isIPv6 } from 'node:net'
import { parseDuration } from '@session-relay/common/config/duration'
import { parseQuantity as quantityValue } from '../model/quantity.js'
import type { PolicySettings } from '../domain/policy-settings.js'
import type { RegistrySettings } from '../registry/settings.js'
import type { RuntimeSettings } from '../runtime/settings.js'
import type { StoreSettings } from '../store/settings.js'
import { integerUpTo, rowOf } from '../setting-parsers.js'

export type LocalSettings = {
  localBuilds: number // builds running at once on this machine (local runtime)
  localWorker: string // '' : the project's cargo build of worker/
  localCacheDir: string // '' : {dataDir}/runtime/worker/compiled
  localToolchainsDir: string // '' : {dataDir}/toolchains
  localGoProxy: string // where a machine without Go fetches the pinned one
  rustRoot: string // RUST_ROOT, the builder's own setting; '' : the checkout's, else prepared
  localAllowPrivateOutbound: string[] // CIDR ranges functions may reach although internal
  localWorkerThreads: number // the worker's threads serving requests
  localBaselineFirst: boolean // a new build answers from Winch's code while Cranelift compiles it
  localMemoryBudgetBytes: number | null // every instance's memory together, in the worker; null: its default
  localIdleTimeoutMs: number // 0: never unload an idle application
}

/**
 * What the local runtime is given: its section, where its files and keys are, the registry, the
 * shared timeouts, each application's share of the worker.
 */
export type LocalRuntimeConfig = LocalSettings &
  Pick<StoreSettings, 'dataDir' | 'secretKeyFile'> &
  Pick<RegistrySettings, 'imageRepository' | 'registryInsecure' | 'dockerConfig'> &
  Pick<RuntimeSettings, 'buildTimeoutMs' | 'invokeTimeoutMs'> &
  Pick<PolicySettings, 'localMaxConcurrentRequests' | 'localMaxQueuedRequests'>

const setting = rowOf<LocalSettings>()

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

// The worker's --memory-budget-bytes (worker/src/budget.rs): whole bytes, at least 16 MiB.
function parseMemoryBudget(text: string): number | null {
  if (text === '') return null
  const value = quantityValue(text)
  const bytes = value === null ? null : (value.numerator + value.denominator - 1n) / value.denominator
  if (bytes === null || bytes < 16n * 2n ** 20n || bytes > BigInt(Number.MAX_SAFE_INTEGER))
    throw new Error('expected a memory quantity of at least 16Mi, such as 8Gi')
  return Number(bytes)
}

export const localSettings = [
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
    help: "local runtime: the Go and rust toolchains builds prepare; empty: the data dir's",
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
    key: 'rustRoot',
    env: 'RUST_ROOT',
    flag: '--rust-root',
    default: '',
    parse: anyText,
    help: "local runtime: the wasm32 Rust toolchain root; empty: the checkout's or one prepared",
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
    key: 'localBaselineFirst',
    env: 'PLATFORM_LOCAL_BASELINE_FIRST',
    flag: '--local-baseline-first',
    default: 'true',
    parse: parseBoolean,
    help: "local runtime: a new build answers from Winch's code while Cranelift compiles it",
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
]
