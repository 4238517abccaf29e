// An application's variables: checked and stored from a PATCH, shown without their secrets, and
// their values for whatever runs the application on this machine. Where a secret value lives
// depends on the runtime: in the cluster, in the application's Secret (cluster/variables-secret.ts),
// which the SpinApp references and the control plane never reads back; on the local runtime,
// sealed in the database (store/secret-box.ts).
// A secretRef names a Secret the control plane never reads: only a SpinApp can use it.
import type { Cluster } from '../cluster/cluster.js'
import { clusterNotConfigured } from '../cluster/kube.js'
import { writeSecretValues } from '../cluster/variables-secret.js'
import type { ControlConfig } from '../config.js'
import { InvalidInputError, UnavailableError } from '../errors.js'
import type { LocalRuntime } from '../local/local.js'
import type { AppSettings, StoredVariable, VariableInputT, VariableViewT } from '../model/app-settings.js'
import { isVariableName, VARIABLE_NAME_RULE } from '../model/app-settings.js'
import type { StoredApplication } from '../store/applications.js'
import { secretBox } from '../store/secret-box.js'

export type VariableDeps = { config: ControlConfig; cluster: Cluster | null; local?: LocalRuntime | null | undefined }

const MAX_TOTAL_VALUE_BYTES = 256 * 1024

/** The data a sealed value is bound to: it opens only for this variable of this application. */
const sealContext = (appId: string, name: string): string => `${appId}/${name}`

/** Every variable's name, sorted. */
export function variableNames (application: { settings: AppSettings }): string[] {
  return Object.keys(application.settings.variables).sort()
}

/**
 * Every variable's current value for a runtime on this machine: values, and secrets unsealed.
 * In the cluster only the plain values (the SpinApp references the Secret for the others); a
 * secretRef never (without a cluster there is no Secret to read: unresolvedVariables names them).
 */
export function variableValues (deps: VariableDeps, application: StoredApplication): Promise<Record<string, string>> {
  // A promise (a failure to unseal rejects it): the contract of whoever runs the application, which may come to read elsewhere.
  return new Promise((resolve) => resolve(collectValues(deps, application)))
}

function collectValues ({ config, cluster }: VariableDeps, application: StoredApplication): Record<string, string> {
  const values: Record<string, string> = {}
  for (const name of variableNames(application)) {
    const variable = application.settings.variables[name] as StoredVariable
    if ('value' in variable) {
      values[name] = variable.value
    } else if (!('secretRef' in variable) && cluster === null && variable.sealed !== undefined) {
      const opened = secretBox(config).open(variable.sealed, sealContext(application.id, name))
      if (opened === null) throw new UnavailableError(`variables.${name}: its secret value does not open with this secret key (was --secret-key-file or the data directory's secret.key replaced?); set it again`)
      values[name] = opened
    }
  }
  return values
}

/** The variables a runtime without a cluster cannot give the application (secretRefs), for its deployment's message. */
export function unresolvedVariables ({ cluster }: Pick<VariableDeps, 'cluster'>, application: { settings: AppSettings }): string[] {
  if (cluster !== null) return []
  return variableNames(application).filter((name) => 'secretRef' in (application.settings.variables[name] as StoredVariable))
}

/** The variables as answers show them: a secret as `{secret: true}`, whatever is stored with it. */
export function variablesView (variables: Record<string, StoredVariable>): Record<string, VariableViewT> {
  const view: Record<string, VariableViewT> = {}
  for (const [name, variable] of Object.entries(variables)) {
    view[name] = 'value' in variable ? { value: variable.value } : 'secretRef' in variable ? { secretRef: { ...variable.secretRef } } : { secret: true }
  }
  return view
}

/**
 * The variables a PATCH gives, checked and made storable: names by Spin's rules, secret values
 * written to the application's Secret (cluster) or sealed (local). `{secret: true}` keeps the
 * value stored now. The Secret ends up holding exactly the secret variables given.
 */
export async function storeVariables ({ config, cluster, local }: VariableDeps, application: StoredApplication, input: Record<string, VariableInputT>): Promise<Record<string, StoredVariable>> {
  // Each value is bounded by the schema; all of them together too: they must fit one Secret
  // (1 MiB, base64 taking a third more) and every SpinApp apply.
  const total = Object.values(input).reduce((sum, variable) => sum + ('value' in variable ? Buffer.byteLength(variable.value) : 'secret' in variable && variable.secret !== true ? Buffer.byteLength(variable.secret) : 0), 0)
  if (total > MAX_TOTAL_VALUE_BYTES) throw new InvalidInputError(`variables: ${total} bytes of values in all, at most ${MAX_TOTAL_VALUE_BYTES}`)
  const stored: Record<string, StoredVariable> = {}
  const secrets = new Map<string, string | true>()
  for (const [name, variable] of Object.entries(input)) {
    if (!isVariableName(name)) throw new InvalidInputError(`variables: ${JSON.stringify(name.slice(0, 80))} is not ${VARIABLE_NAME_RULE}`)
    if ('value' in variable) stored[name] = { value: variable.value }
    else if ('secretRef' in variable) stored[name] = { secretRef: { name: variable.secretRef.name, key: variable.secretRef.key } }
    else {
      const before = application.settings.variables[name]
      if (variable.secret === true && (before === undefined || !('secret' in before))) {
        throw new InvalidInputError(`variables.${name}: no secret value is stored to keep; send {"secret": "<the value>"}`)
      }
      secrets.set(name, variable.secret)
    }
  }
  if (cluster !== null) {
    const values: Record<string, string> = {}
    for (const [name, secret] of secrets) {
      if (secret !== true) values[name] = Buffer.from(secret, 'utf8').toString('base64')
      stored[name] = { secret: true }
    }
    const removed = Object.entries(application.settings.variables).filter(([name, variable]) => 'secret' in variable && !secrets.has(name)).map(([name]) => name)
    if (Object.keys(values).length > 0 || removed.length > 0) await writeSecretValues(cluster.kube, application, values, removed)
    return stored
  }
  if (secrets.size > 0 && local == null) throw clusterNotConfigured()
  for (const [name, secret] of secrets) {
    const before = application.settings.variables[name] as { secret: true; sealed?: string }
    const sealed = secret === true ? before.sealed : secretBox(config).seal(secret, sealContext(application.id, name))
    stored[name] = sealed === undefined ? { secret: true } : { secret: true, sealed }
  }
  return stored
}
