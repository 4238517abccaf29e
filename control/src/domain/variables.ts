// An application's variables: checked and stored from a PATCH, shown without their secrets, and
// their values for whatever runs the application on this machine. Where a secret value lives is
// the runtime's (Runtime.storeSecrets): in a cluster the application's Secret, which the
// SpinApp references and the control plane never reads back; on this machine, sealed in the
// database (store/secret-box.ts). A secretRef names a Secret the control plane never reads.
import type { StoreSettings } from '../store/settings.js'
import { InvalidInputError, UnavailableError } from '@session-relay/common/errors'
import type { AppSettings, StoredVariable, VariableInputT, VariableViewT } from '../model/app-settings.js'
import { isVariableName, VARIABLE_NAME_RULE } from '../model/app-settings.js'
import type { StoredApplication } from '../store/applications.js'
import { openVariable } from '../store/secret-box.js'
import type { DomainDeps } from './deps.js'

const MAX_TOTAL_VALUE_BYTES = 256 * 1024

/** Every variable's name, sorted. */
export function variableNames(application: { settings: AppSettings }): string[] {
  return Object.keys(application.settings.variables).sort()
}

/**
 * Every variable's current value for a runtime on this machine: values, and secrets unsealed;
 * never a secretRef (there is no Secret to read without a cluster).
 */
export function variableValues(config: StoreSettings, application: StoredApplication): Promise<Record<string, string>> {
  // A promise (a failure to unseal rejects it): the contract of whoever runs the application, which may come to read elsewhere.
  return new Promise((resolve) => resolve(collectValues(config, application)))
}

function collectValues(config: StoreSettings, application: StoredApplication): Record<string, string> {
  const values: Record<string, string> = {}
  for (const name of variableNames(application)) {
    const variable = application.settings.variables[name] as StoredVariable
    if ('value' in variable) {
      values[name] = variable.value
    } else if ('sealed' in variable && variable.sealed !== undefined) {
      const opened = openVariable(config, application.id, name, variable.sealed)
      if (opened === null)
        throw new UnavailableError(
          `variables.${name}: its secret value does not open with this secret key (was --secret-key-file or the data directory's secret.key replaced?); set it again`,
        )
      values[name] = opened
    }
  }
  return values
}

/** The variables as answers show them: a secret as `{secret: true}`, whatever is stored with it. */
export function variablesView(variables: Record<string, StoredVariable>): Record<string, VariableViewT> {
  const view: Record<string, VariableViewT> = {}
  for (const [name, variable] of Object.entries(variables)) {
    view[name] =
      'value' in variable
        ? { value: variable.value }
        : 'secretRef' in variable
          ? { secretRef: { ...variable.secretRef } }
          : { secret: true }
  }
  return view
}

/**
 * The variables a PATCH gives, checked and made storable: names by Spin's rules, secret values
 * written to the application's Secret (cluster) or sealed (local). `{secret: true}` keeps the
 * value stored now. The Secret ends up holding exactly the secret variables given.
 */
export async function storeVariables(
  { runtime }: Pick<DomainDeps, 'runtime'>,
  application: StoredApplication,
  input: Record<string, VariableInputT>,
): Promise<Record<string, StoredVariable>> {
  // Each value is bounded by the schema; all of them together too: they must fit one Secret
  // (1 MiB, base64 taking a third more) and every SpinApp apply.
  const total = Object.values(input).reduce(
    (sum, variable) =>
      sum +
      ('value' in variable
        ? Buffer.byteLength(variable.value)
        : 'secret' in variable && variable.secret !== true
          ? Buffer.byteLength(variable.secret)
          : 0),
    0,
  )
  if (total > MAX_TOTAL_VALUE_BYTES)
    throw new InvalidInputError(`variables: ${total} bytes of values in all, at most ${MAX_TOTAL_VALUE_BYTES}`)
  const stored: Record<string, StoredVariable> = {}
  const secrets = new Map<string, string | true>()
  for (const [name, variable] of Object.entries(input)) {
    if (!isVariableName(name))
      throw new InvalidInputError(`variables: ${JSON.stringify(name.slice(0, 80))} is not ${VARIABLE_NAME_RULE}`)
    if ('value' in variable) stored[name] = { value: variable.value }
    else if ('secretRef' in variable)
      stored[name] = { secretRef: { name: variable.secretRef.name, key: variable.secretRef.key } }
    else {
      const before = application.settings.variables[name]
      if (variable.secret === true && (before === undefined || !('secret' in before))) {
        throw new InvalidInputError(
          `variables.${name}: no secret value is stored to keep; send {"secret": "<the value>"}`,
        )
      }
      secrets.set(name, variable.secret)
    }
  }
  return { ...stored, ...(await runtime.storeSecrets(application, secrets)) }
}
