// PATCH application: the settings given replace what is stored, the rest stays. When the
// application has a successful build the change is reconciled at once (domain/reconcile.ts)
// and the answer's deployment message says how that went.
import type { ApplicationT } from '../model/resources.js'
import type { AutoscalingT, ConcurrencyT, ResourcesT, VariableInputT } from '../model/app-settings.js'
import { HttpError, InvalidInputError } from '@session-relay/common/errors'
import type { AppSettings } from '../model/app-settings.js'
import { findApplication, updateSettings } from '../store/applications.js'
import { latestImage } from '../store/builds.js'
import { describeApplication } from './applications.js'
import { REPORTED_WAIT_MS } from './reconcile.js'
import type { DomainDeps } from './deps.js'
import { applicationNotFound } from './not-found.js'
import { checkConcurrency, checkResources, resourcesInForce } from './policy.js'
import { storeVariables } from './variables.js'

export type SettingsPatch = {
  description?: string | undefined
  replicas?: number | undefined
  autoscaling?: AutoscalingT | null | undefined
  resources?: ResourcesT | undefined
  concurrency?: ConcurrencyT | undefined
  variables?: Record<string, VariableInputT> | undefined
}

export async function configureApplication(
  deps: DomainDeps,
  appId: string,
  patch: SettingsPatch,
): Promise<ApplicationT> {
  const { db, config } = deps
  const application = await findApplication(db, appId)
  if (application === null) throw applicationNotFound()
  const change: Partial<AppSettings> & { description?: string } = {}
  if (patch.description !== undefined) change.description = patch.description
  if (patch.replicas !== undefined) change.replicas = patch.replicas
  if (patch.resources !== undefined) change.resources = checkResources(config, patch.resources)
  if (patch.concurrency !== undefined) change.concurrency = checkConcurrency(config, patch.concurrency)
  if (patch.autoscaling !== undefined) {
    const autoscaling = patch.autoscaling
    if (autoscaling !== null && autoscaling.minReplicas > autoscaling.maxReplicas) {
      throw new InvalidInputError(
        `autoscaling.minReplicas: ${autoscaling.minReplicas} is above autoscaling.maxReplicas ${autoscaling.maxReplicas}`,
      )
    }
    change.autoscaling = autoscaling
  }
  // The autoscaler measures CPU use against the request: without one it could never act.
  // Kubernetes makes a container's request its limit when only the limit is set, so a limit will do.
  const autoscaling = change.autoscaling !== undefined ? change.autoscaling : application.settings.autoscaling
  const cpu = resourcesInForce(config, change.resources ?? application.settings.resources)
  if (autoscaling !== null && cpu.cpuRequest === undefined && cpu.cpuLimit === undefined) {
    throw new InvalidInputError(
      "autoscaling: needs resources.cpuRequest or resources.cpuLimit (or the platform's --resource-cpu-request or --resource-cpu-limit): CPU use is measured against the request, which Kubernetes takes from the limit when only that is set",
    )
  }
  // Last: this writes secret values to the cluster, which only a valid request should do.
  if (patch.variables !== undefined) change.variables = await storeVariables(deps, application, patch.variables)
  const updated = await updateSettings(db, appId, change)
  if (updated === null) throw applicationNotFound()

  const runs =
    patch.replicas !== undefined ||
    patch.autoscaling !== undefined ||
    patch.resources !== undefined ||
    patch.concurrency !== undefined ||
    patch.variables !== undefined
  let note = ''
  if (runs && (await latestImage(db, appId)) !== null) {
    // The settings are stored whatever happens now: a runtime that refuses makes the answer
    // say so (the reconcile retries), not a 503 that would read as nothing changed.
    const reconciled = await deps.deployments.reconcile(appId, { waitMs: REPORTED_WAIT_MS })
    if (reconciled.kind === 'failed') {
      if (!(reconciled.error instanceof HttpError)) throw reconciled.error
      note = `saved but not applied (${reconciled.error.message}); retried with back-off, or POST deploy applies them now`
    } else if (reconciled.kind === 'elsewhere') {
      note = 'saved; another replica is applying them'
    } else if (reconciled.kind !== 'idle') {
      note = 're-applied with the new settings'
    }
  }
  return describeApplication(deps, appId, note === '' ? undefined : note)
}
