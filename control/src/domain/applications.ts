// An application as the API shows and removes it: the stored rows together with what runs.
import type { AppSettings } from '../model/app-settings.js'
import type { ApplicationT, ConditionT, DeploymentT } from '../model/resources.js'
import type { StoredApplicationDetail } from '../store/applications.js'
import { deleteApplication, findApplication, getApplication } from '../store/applications.js'
import { lastDeployedBuild, latestImage } from '../store/builds.js'
import { readState, recordConditions } from '../store/deployments.js'
import { deploymentMessage, differs, readyCondition, setCondition } from './conditions.js'
import type { DomainDeps } from './deps.js'
import { applicationNotFound } from './not-found.js'
import { concurrencyInForce, resourcesInForce } from './policy.js'
import { variablesView } from './variables.js'

/** The settings as answers show them: replicas defaulted, the resources and concurrency in force, no secret. */
function settingsView(
  config: DomainDeps['config'],
  settings: AppSettings,
): Pick<ApplicationT, 'replicas' | 'autoscaling' | 'resources' | 'concurrency' | 'variables'> {
  return {
    replicas: settings.replicas ?? config.replicas,
    autoscaling: settings.autoscaling,
    resources: resourcesInForce(config, settings.resources),
    concurrency: concurrencyInForce(config, settings.concurrency),
    variables: variablesView(settings.variables),
  }
}

/**
 * The stored application in the API's shape, with its deployment. `deployedBuild`: the build
 * deployed last, which a re-locked image (another digest) came from.
 */
export function applicationView(
  config: DomainDeps['config'],
  stored: StoredApplicationDetail,
  deployment: DeploymentT | null,
  deployedBuild: string | null = null,
  conditions: ConditionT[] = [],
): ApplicationT {
  const { clusterName, settings, ...rest } = stored
  void clusterName
  if (deployment === null) return { ...rest, ...settingsView(config, settings), deployment: null }
  // What runs is first what the runtime reports: a build's own image names that build.
  const running =
    stored.builds.find((build) => build.imageRef === deployment.image) ??
    stored.builds.find((build) => build.id === deployedBuild)
  // The size is the build's (a re-lock adds a few KiB); the newest succeeded one when none is known.
  const size = (running ?? stored.builds.find((build) => build.status === 'succeeded'))?.imageSizeBytes ?? null
  return {
    ...rest,
    ...settingsView(config, settings),
    deployment: { ...deployment, imageSizeBytes: size, buildId: running?.id ?? null, conditions },
  }
}

/**
 * The application with its functions, builds and, once it has a successful build, its
 * deployment: what the runtime reports now, with the stored conditions (Ready kept up to date
 * with what answers, so the next answer of any replica agrees). `note`, when given, opens the
 * message in place of what the conditions would say (PATCH says how its own apply went).
 */
export async function describeApplication(
  { db, config, runtime }: DomainDeps,
  appId: string,
  note?: string,
): Promise<ApplicationT> {
  const application = await getApplication(db, appId)
  if (application === null) throw applicationNotFound()
  const image = await latestImage(db, application.id)
  const live = image === null ? null : await runtime.deployment(application, image)
  if (live === null) return applicationView(config, application, null)
  let conditions = (await readState(db, application.id))?.conditions ?? []
  const ready = readyCondition(live)
  if (conditions.length > 0 && differs(conditions, ready)) {
    conditions = setCondition(conditions, ready, new Date())
    await recordConditions(db, application.id, conditions)
  }
  const message = note === undefined ? deploymentMessage(conditions, live.message) : `${note}; ${live.message}`
  return applicationView(
    config,
    application,
    { ...live, message },
    await lastDeployedBuild(db, application.id),
    conditions,
  )
}

/** The application, its rows and what runs and was built for it. */
export async function removeApplication({ db, runtime, deployments }: DomainDeps, appId: string): Promise<void> {
  const application = await findApplication(db, appId)
  if (application === null) throw applicationNotFound()
  // What runs first: if the runtime refuses, the application stays and the caller can try
  // again, rather than leaving a running deployment nobody can reach through this API. With
  // no reconcile running, none applies again what this removes (a watch event would ask for one).
  await deployments.exclusive(application.id, async () => {
    await runtime.remove(application)
    if (!(await deleteApplication(db, application.id))) throw applicationNotFound()
  })
}
