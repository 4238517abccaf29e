// The platform's resource policy (--resource-policy and the four --resource-* values) applied
// to an application's CPU and memory. In every mode a platform value fills what the
// application leaves unset; `max` also bounds what it sets (a PATCH above is refused, and a
// deploy lowers a value stored under a looser policy); `forced` replaces it. The values in force
// are computed at every read and every deploy, never stored, so a tightened policy holds for old
// applications from the next deploy on. In every mode no memory request or limit passes
// --resource-max-memory (512Mi by default): the open policy bounds memory too, since on one
// machine every application's instances share the worker's (issue 40). An application's
// concurrency (its share of the worker's requests) is bounded the same way by
// --local-max-concurrent-requests and --local-max-queued-requests, in every mode: they are
// the default and the largest value.
import type { PolicySettings } from './policy-settings.js'
import { InvalidInputError } from '@session-relay/common/errors'
import type {
  ConcurrencyInForce,
  ConcurrencyT,
  ResourceField,
  ResourcePolicyT,
  ResourcesT,
} from '../model/app-settings.js'
import { CONCURRENCY_FIELDS, RESOURCE_FIELDS } from '../model/app-settings.js'
import type { QuantityValue } from '../model/quantity.js'
import { compareQuantities, parseQuantity, QUANTITY_RULE } from '../model/quantity.js'

const MEMORY_FIELDS: readonly ResourceField[] = ['memoryRequest', 'memoryLimit']

/** The memory fields bounded by --resource-max-memory, to their cap; the others to undefined. */
const memoryCap = (config: PolicySettings, field: ResourceField): string | undefined =>
  config.resourceMaxMemory !== '' && MEMORY_FIELDS.includes(field) ? config.resourceMaxMemory : undefined

function platformValues(config: PolicySettings): ResourcesT {
  const values: ResourcesT = {}
  const given: Record<ResourceField, string> = {
    cpuRequest: config.resourceCpuRequest,
    cpuLimit: config.resourceCpuLimit,
    memoryRequest: config.resourceMemoryRequest,
    memoryLimit: config.resourceMemoryLimit,
  }
  for (const field of RESOURCE_FIELDS) if (given[field] !== '') values[field] = given[field]
  return values
}

/** What GET /policy answers. */
export function policyView(config: PolicySettings): ResourcePolicyT {
  const values = platformValues(config)
  return {
    mode: config.resourcePolicy,
    cpuRequest: values.cpuRequest ?? null,
    cpuLimit: values.cpuLimit ?? null,
    memoryRequest: values.memoryRequest ?? null,
    memoryLimit: values.memoryLimit ?? null,
    maxMemory: config.resourceMaxMemory === '' ? null : config.resourceMaxMemory,
    concurrency: platformConcurrency(config),
  }
}

const value = (text: string | undefined): QuantityValue | null => (text === undefined ? null : parseQuantity(text))
const above = (a: string | undefined, b: string | undefined): boolean => {
  const left = value(a)
  const right = value(b)
  return left !== null && right !== null && compareQuantities(left, right) > 0
}

const PAIRS = [
  ['cpuRequest', 'cpuLimit'],
  ['memoryRequest', 'memoryLimit'],
] as const

/**
 * The resources a PATCH asks for, checked: each a quantity this platform accepts, no request
 * above its limit, and under `max` nothing above the platform's value. Refused with a 400 that
 * names the field.
 */
export function checkResources(config: PolicySettings, requested: ResourcesT): ResourcesT {
  for (const field of RESOURCE_FIELDS) {
    const text = requested[field]
    if (text !== undefined && parseQuantity(text) === null)
      throw new InvalidInputError(`resources.${field}: expected ${QUANTITY_RULE}`)
  }
  for (const [request, limit] of PAIRS) {
    if (above(requested[request], requested[limit]))
      throw new InvalidInputError(
        `resources.${request}: ${requested[request] ?? ''} is above resources.${limit} ${requested[limit] ?? ''}`,
      )
  }
  for (const field of RESOURCE_FIELDS) {
    if (above(requested[field], memoryCap(config, field)))
      throw new InvalidInputError(
        `resources.${field}: ${requested[field] ?? ''} is above the platform's largest memory ${config.resourceMaxMemory} (--resource-max-memory)`,
      )
  }
  if (config.resourcePolicy === 'max') {
    const platform = platformValues(config)
    for (const field of RESOURCE_FIELDS) {
      if (above(requested[field], platform[field]))
        throw new InvalidInputError(
          `resources.${field}: ${requested[field] ?? ''} is above the platform's maximum ${platform[field] ?? ''}`,
        )
    }
  }
  if (config.resourcePolicy !== 'forced') {
    const inForce = resourcesInForce(config, requested)
    for (const [request, limit] of PAIRS) {
      if (above(requested[request], inForce[limit]))
        throw new InvalidInputError(
          `resources.${request}: ${requested[request] ?? ''} is above the platform's ${limit} ${inForce[limit] ?? ''}, which applies when resources.${limit} is not given`,
        )
    }
  }
  return requested
}

/** The resources in force for what the application stored, under the policy as it is now. */
export function resourcesInForce(config: PolicySettings, stored: ResourcesT): ResourcesT {
  const platform = platformValues(config)
  const result: ResourcesT = {}
  for (const field of RESOURCE_FIELDS) {
    const own = stored[field]
    const cap = platform[field]
    const chosen =
      config.resourcePolicy === 'forced'
        ? (cap ?? own)
        : config.resourcePolicy === 'max' && above(own, cap)
          ? cap
          : (own ?? cap)
    // A value stored before the cap (or under a looser one) is lowered to it.
    const largest = memoryCap(config, field)
    if (chosen !== undefined) result[field] = (above(chosen, largest) ? largest : undefined) ?? chosen
  }
  // A lowered limit may now sit below a request that was fine with the old one.
  for (const [request, limit] of PAIRS) {
    if (above(result[request], result[limit])) result[request] = result[limit]
  }
  return result
}

export type ConcurrencySettings = Pick<PolicySettings, 'localMaxConcurrentRequests' | 'localMaxQueuedRequests'>

const CONCURRENCY_FLAGS = {
  maxRunning: '--local-max-concurrent-requests',
  maxQueued: '--local-max-queued-requests',
} as const

function platformConcurrency(config: ConcurrencySettings): ConcurrencyInForce {
  return { maxRunning: config.localMaxConcurrentRequests, maxQueued: config.localMaxQueuedRequests }
}

/** The concurrency a PATCH asks for, checked: nothing above the platform's (400 naming the field and the setting). */
export function checkConcurrency(config: ConcurrencySettings, requested: ConcurrencyT): ConcurrencyT {
  const platform = platformConcurrency(config)
  for (const field of CONCURRENCY_FIELDS) {
    const own = requested[field]
    if (own !== undefined && own > platform[field])
      throw new InvalidInputError(
        `concurrency.${field}: ${own} is above the platform's largest ${platform[field]} (${CONCURRENCY_FLAGS[field]})`,
      )
  }
  return requested
}

/** The concurrency in force for what the application stored: its own values, lowered to the platform's now, else the platform's. */
export function concurrencyInForce(config: ConcurrencySettings, stored: ConcurrencyT): ConcurrencyInForce {
  const platform = platformConcurrency(config)
  return {
    maxRunning: Math.min(stored.maxRunning ?? platform.maxRunning, platform.maxRunning),
    maxQueued: Math.min(stored.maxQueued ?? platform.maxQueued, platform.maxQueued),
  }
}
