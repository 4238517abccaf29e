// What the platform gives and allows every application, on both runtimes: its replicas, its CPU
// and memory under the resource policy (domain/policy.ts applies it), its share of requests.
import { ConfigError } from '@session-relay/common/config/settings'
import { compareQuantities, parseQuantity as quantityValue, QUANTITY_RULE } from '../model/quantity.js'
import { integerFromZeroTo, integerUpTo, rowOf } from '../setting-parsers.js'

type ResourcePolicyMode = 'open' | 'max' | 'forced'

export type PolicySettings = {
  replicas: number
  resourcePolicy: ResourcePolicyMode
  resourceCpuRequest: string // Kubernetes quantities; '' : none
  resourceCpuLimit: string
  resourceMemoryRequest: string
  resourceMemoryLimit: string
  resourceMaxMemory: string // the largest memory request or limit an application may have, every mode; '' : none
  localMaxConcurrentRequests: number // per application: requests holding an instance at once
  localMaxQueuedRequests: number // per application: requests waiting behind them, then 429
}

const setting = rowOf<PolicySettings>()

function parseResourcePolicy(text: string): ResourcePolicyMode {
  if (text !== 'open' && text !== 'max' && text !== 'forced') throw new Error('expected open, max or forced')
  return text
}

function parseOptionalQuantity(text: string): string {
  if (text !== '' && quantityValue(text) === null) throw new Error(`expected ${QUANTITY_RULE}`)
  return text
}

export const policySettings = [
  setting({
    key: 'replicas',
    env: 'PLATFORM_REPLICAS',
    flag: '--replicas',
    default: '1',
    parse: integerUpTo(100),
    help: 'spec.replicas of every SpinApp (1 to 100)',
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
]

/** Requests under their limits, memory under the cap, and a binding policy with something to bind. */
export function checkPolicySettings(config: PolicySettings): void {
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
