// What an application is configured with beyond its code: replicas or autoscaling, CPU and
// memory, its share of the shared worker's requests, and the variables its functions read. The request shapes (PATCH) and the answer
// shapes differ in one place: a secret goes in as its value and comes out as `{secret: true}`.
import { Type } from 'typebox'
import type { Static } from 'typebox'
import { isVariableName as isSpinVariableName } from '@session-relay/spin/variable-name'
import { mapOf } from './map-of.js'
import { QUANTITY_RULE } from './quantity.js'

const MAX_REPLICAS = 100
const MAX_VARIABLES = 100
const MAX_VARIABLE_VALUE_LENGTH = 16 * 1024
export const MAX_VARIABLE_NAME_LENGTH = 64

export const VARIABLE_NAME_RULE = `a Spin variable name of at most ${MAX_VARIABLE_NAME_LENGTH} characters: lowercase letters, digits and "_", starting with a letter, ending with a letter or digit, no "__"`

/** Spin's rules for a variable name (the one copy, which the relock and the host use too), and a length bound of this platform's. */
export function isVariableName(text: string): boolean {
  return text.length <= MAX_VARIABLE_NAME_LENGTH && isSpinVariableName(text)
}

const Replicas = Type.Integer({
  minimum: 1,
  maximum: MAX_REPLICAS,
  description: `an integer from 1 to ${MAX_REPLICAS}`,
})

export const Autoscaling = Type.Object(
  {
    minReplicas: Replicas,
    maxReplicas: Replicas,
    targetCpuPercent: Type.Integer({
      minimum: 1,
      maximum: 100,
      description: 'the average CPU use, in percent of the CPU request, the autoscaler keeps the pods at: 1 to 100',
    }),
  },
  {
    additionalProperties: false,
    description:
      'a HorizontalPodAutoscaler (autoscaling/v2) between minReplicas and maxReplicas on CPU use; replicas is then ignored',
  },
)

const Quantity = Type.String({ maxLength: 32, description: QUANTITY_RULE })

export const Resources = Type.Object(
  {
    cpuRequest: Type.Optional(Quantity),
    cpuLimit: Type.Optional(Quantity),
    memoryRequest: Type.Optional(Quantity),
    memoryLimit: Type.Optional(Quantity),
  },
  {
    additionalProperties: false,
    description:
      "the pods' CPU and memory requests and limits (Kubernetes quantities); a request may not exceed its limit",
  },
)

export const RESOURCE_FIELDS = ['cpuRequest', 'cpuLimit', 'memoryRequest', 'memoryLimit'] as const

// The worker's own bounds (worker/README.md, "limits"): its pool of 1,000 instances and its
// longest queue. The platform's settings narrow them (domain/policy.ts).
const MAX_RUNNING = 1000
const MAX_QUEUED = 10_000

export const Concurrency = Type.Object(
  {
    maxRunning: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: MAX_RUNNING,
        description:
          "the application's requests running at once (each holding one of the worker's instances): from 1 to the platform's --local-max-concurrent-requests, which is also the default",
      }),
    ),
    maxQueued: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: MAX_QUEUED,
        description:
          "its requests waiting, in order of arrival, for one of those turns (holding no instance); past them 429 with Retry-After: from 0 to the platform's --local-max-queued-requests, which is also the default",
      }),
    ),
  },
  {
    additionalProperties: false,
    description:
      "the application's share of the shared worker on one machine (local runtime); a cluster stores it but SpinKube has no such limit, so it is not applied there",
  },
)

export const CONCURRENCY_FIELDS = ['maxRunning', 'maxQueued'] as const

// RFC 1123 subdomain (a Secret's name) and a Secret's key.
const SecretRef = Type.Object(
  {
    name: Type.String({
      pattern: '^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$',
      description: 'the name of a Secret in the namespace',
    }),
    key: Type.String({ pattern: '^[-._a-zA-Z0-9]{1,253}$', description: 'a key of that Secret' }),
  },
  { additionalProperties: false },
)

const Value = Type.String({
  maxLength: MAX_VARIABLE_VALUE_LENGTH,
  description: `text of at most ${MAX_VARIABLE_VALUE_LENGTH} characters`,
})

const PlainVariable = Type.Object(
  { value: Value },
  { additionalProperties: false, description: 'a value, shown in answers' },
)
const SecretRefVariable = Type.Object(
  { secretRef: SecretRef },
  {
    additionalProperties: false,
    description: 'the value of an existing Secret of the namespace, which the control plane never reads (cluster only)',
  },
)

export const VariableInput = Type.Union([
  PlainVariable,
  Type.Object(
    {
      secret: Type.Union([Value, Type.Literal(true)], {
        description: 'the secret value; true keeps the one stored now',
      }),
    },
    {
      additionalProperties: false,
      description:
        'a secret value: stored in a Secret the control plane owns (cluster) or encrypted in its database (local), never shown',
    },
  ),
  SecretRefVariable,
])

const VariableView = Type.Union([
  PlainVariable,
  Type.Object(
    { secret: Type.Literal(true) },
    { additionalProperties: false, description: 'a secret: its value is never shown' },
  ),
  SecretRefVariable,
])

export const VariablesInput = mapOf<Static<typeof VariableInput>>(
  VariableInput,
  `variable name (${VARIABLE_NAME_RULE}) to its value; every function of the application reads them through Spin's variables interface`,
  { maxProperties: MAX_VARIABLES },
)
const VariablesView = mapOf<Static<typeof VariableView>>(
  VariableView,
  'variable name to its value; secrets show as {"secret": true}',
)

/** What GET application shows: the settings in force (the platform's policy applied). */
export const AppSettingsView = {
  replicas: Type.Integer({
    description: "the replicas asked for (default: the platform's); ignored while autoscaling is set",
  }),
  autoscaling: Type.Union([Autoscaling, Type.Null()]),
  resources: Resources,
  concurrency: Type.Object(
    { maxRunning: Type.Integer(), maxQueued: Type.Integer() },
    { description: "the application's share of the worker in force: its own values, else the platform's" },
  ),
  variables: VariablesView,
}

export const ResourcePolicy = Type.Object({
  mode: Type.Enum(['open', 'max', 'forced'], {
    description:
      "open: the platform's values are defaults; max: also upper bounds (above is 400); forced: they replace the application's",
  }),
  cpuRequest: Type.Union([Type.String(), Type.Null()]),
  cpuLimit: Type.Union([Type.String(), Type.Null()]),
  memoryRequest: Type.Union([Type.String(), Type.Null()]),
  memoryLimit: Type.Union([Type.String(), Type.Null()]),
  maxMemory: Type.Union([Type.String(), Type.Null()], {
    description: 'the largest memory request or limit an application may have, in every mode (null: none)',
  }),
  concurrency: Type.Object(
    { maxRunning: Type.Integer(), maxQueued: Type.Integer() },
    {
      description:
        'the largest concurrency an application may set, and what it gets when it sets none (local runtime: --local-max-concurrent-requests, --local-max-queued-requests)',
    },
  ),
})

export type AutoscalingT = Static<typeof Autoscaling>
export type ResourcesT = Static<typeof Resources>
export type ResourceField = (typeof RESOURCE_FIELDS)[number]
export type ConcurrencyT = Static<typeof Concurrency>
/** The concurrency in force: every field has its value. */
export type ConcurrencyInForce = Required<ConcurrencyT>
export type VariableInputT = Static<typeof VariableInput>
export type VariableViewT = Static<typeof VariableView>
export type ResourcePolicyT = Static<typeof ResourcePolicy>

/** A variable as stored: a secret carries its sealed value only on the local runtime (in the cluster it is in a Secret). */
export type StoredVariable =
  { value: string } | { secret: true; sealed?: string } | { secretRef: { name: string; key: string } }

/** An application's settings as stored: replicas null means the platform's. */
export type AppSettings = {
  replicas: number | null
  autoscaling: AutoscalingT | null
  resources: ResourcesT
  /** Empty: the platform's values. */
  concurrency: ConcurrencyT
  variables: Record<string, StoredVariable>
}
