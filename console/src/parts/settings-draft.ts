// The Settings form's state, kept as the text the user typed, and the one PATCH it turns into:
// only the fields that differ from what the API showed, since each field sent replaces the
// stored one (and a resources or variables field replaces the whole map).
import type { Application, ApplicationPatch, ResourcePolicy } from '../api/types'

export const RESOURCE_FIELDS = ['cpuRequest', 'cpuLimit', 'memoryRequest', 'memoryLimit'] as const
export type ResourceField = (typeof RESOURCE_FIELDS)[number]
export const CONCURRENCY_FIELDS = ['maxRunning', 'maxQueued'] as const
export type ConcurrencyField = (typeof CONCURRENCY_FIELDS)[number]

type Variables = NonNullable<ApplicationPatch['variables']>
type Variable = Variables[string]
export type VariableKind = 'value' | 'secret' | 'secretRef'

/**
 * One row of the variables table. `stored` says a secret value is kept under this name: the
 * row then shows "secret, set" and sends `{secret: true}` (keep it) unless the user replaces it.
 * Rows from the API keep their name (remove and add to rename: a kept secret cannot move).
 */
export type VariableRow = {
  key: number
  name: string
  isNew: boolean
  kind: VariableKind
  value: string
  stored: boolean
  replacing: boolean
  refName: string
  refKey: string
}

export type Draft = {
  description: string
  replicas: string
  autoscaling: boolean
  minReplicas: string
  maxReplicas: string
  targetCpuPercent: string
  resources: Record<ResourceField, string>
  concurrency: Record<ConcurrencyField, string>
  variables: VariableRow[]
}

let nextKey = 0
const rowKey = (): number => ++nextKey

export function emptyRow(): VariableRow {
  return {
    key: rowKey(),
    name: '',
    isNew: true,
    kind: 'value',
    value: '',
    stored: false,
    replacing: false,
    refName: '',
    refKey: '',
  }
}

function rowOf(name: string, variable: Variable): VariableRow {
  const row: VariableRow = { ...emptyRow(), name, isNew: false }
  if ('value' in variable) return { ...row, value: variable.value }
  if ('secretRef' in variable)
    return { ...row, kind: 'secretRef', refName: variable.secretRef.name, refKey: variable.secretRef.key }
  return { ...row, kind: 'secret', stored: true }
}

/**
 * The resource fields as the user set them. The API shows the values in force, the platform's
 * filling what the application left unset; a field equal to the platform's value is shown empty
 * (the platform's, said beside it), so that saving other fields does not pin the platform's
 * value of today into the application. Under `forced` the fields are the platform's, never sent.
 */
function resourcesOf(app: Application, policy: ResourcePolicy | null): Record<ResourceField, string> {
  const fields = {} as Record<ResourceField, string>
  for (const field of RESOURCE_FIELDS) {
    const value = app.resources[field] ?? ''
    fields[field] = policy !== null && policy.mode !== 'forced' && value === policy[field] ? '' : value
  }
  return fields
}

/** As resourcesOf: a value equal to the platform's (its default and largest) is shown empty. */
function concurrencyOf(app: Application, policy: ResourcePolicy | null): Record<ConcurrencyField, string> {
  const fields = {} as Record<ConcurrencyField, string>
  for (const field of CONCURRENCY_FIELDS) {
    const value = app.concurrency[field]
    fields[field] = policy !== null && value === policy.concurrency[field] ? '' : String(value)
  }
  return fields
}

export function draftOf(app: Application, policy: ResourcePolicy | null): Draft {
  const scaling = app.autoscaling
  return {
    description: app.description,
    replicas: String(app.replicas),
    autoscaling: scaling !== null,
    minReplicas: String(scaling?.minReplicas ?? 1),
    maxReplicas: String(scaling?.maxReplicas ?? Math.max(app.replicas, 2)),
    targetCpuPercent: String(scaling?.targetCpuPercent ?? 80),
    resources: resourcesOf(app, policy),
    concurrency: concurrencyOf(app, policy),
    variables: Object.entries(app.variables).map(([name, variable]) => rowOf(name, variable)),
  }
}

// Numbers go as numbers when they are numbers; anything else goes as typed, so the API's 400
// names the field rather than the console guessing a rule.
const numberOf = (text: string): number =>
  (text.trim() !== '' && Number.isFinite(Number(text)) ? Number(text) : text) as number

function variableOf(row: VariableRow): Variable {
  if (row.kind === 'value') return { value: row.value }
  if (row.kind === 'secretRef') return { secretRef: { name: row.refName.trim(), key: row.refKey.trim() } }
  return { secret: row.stored && !row.replacing ? true : row.value }
}

// Key order aside, two JSON values are equal when they print alike with sorted keys.
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v !== null && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  )
}

/**
 * The PATCH body for what changed; empty when nothing did. Under a `forced` policy resources
 * are never sent. Throws, in the API's words, for the one mistake the API cannot see: a name twice.
 */
export function patchOf(app: Application, draft: Draft, policy: ResourcePolicy | null): ApplicationPatch {
  const patch: ApplicationPatch = {}
  if (draft.description !== app.description) patch.description = draft.description
  if (numberOf(draft.replicas) !== app.replicas) patch.replicas = numberOf(draft.replicas)
  const autoscaling = draft.autoscaling
    ? {
        minReplicas: numberOf(draft.minReplicas),
        maxReplicas: numberOf(draft.maxReplicas),
        targetCpuPercent: numberOf(draft.targetCpuPercent),
      }
    : null
  if (canonical(autoscaling) !== canonical(app.autoscaling)) patch.autoscaling = autoscaling
  if (policy?.mode !== 'forced') {
    const shown = resourcesOf(app, policy)
    if (RESOURCE_FIELDS.some((field) => draft.resources[field].trim() !== shown[field])) {
      const resources: NonNullable<ApplicationPatch['resources']> = {}
      for (const field of RESOURCE_FIELDS) {
        const text = draft.resources[field].trim()
        if (text !== '') resources[field] = text
      }
      patch.resources = resources
    }
  }
  const shownConcurrency = concurrencyOf(app, policy)
  if (CONCURRENCY_FIELDS.some((field) => draft.concurrency[field].trim() !== shownConcurrency[field])) {
    const concurrency: NonNullable<ApplicationPatch['concurrency']> = {}
    for (const field of CONCURRENCY_FIELDS) {
      const text = draft.concurrency[field].trim()
      if (text !== '') concurrency[field] = numberOf(text)
    }
    patch.concurrency = concurrency
  }
  const variables: Variables = {}
  for (const row of draft.variables) {
    const name = row.name.trim()
    // Two rows of one name would be one key of the map: the later would silently win.
    if (Object.hasOwn(variables, name)) throw new Error(`Invalid input: variables.${name}: the name is given twice`)
    variables[name] = variableOf(row)
  }
  if (canonical(variables) !== canonical(app.variables)) patch.variables = variables
  return patch
}

/**
 * The field a 400 names, as the form's path ("resources.cpuLimit", "variables.greeting"):
 * the API's reasons start with it ("Invalid input: resources.cpuLimit: 2 is above ...").
 */
export function fieldOf(message: string): string | null {
  const match = /^Invalid input: ([A-Za-z_][\w.]*):/.exec(message)
  return match?.[1] ?? null
}
