// Deploying an application's newest image with its settings: the resources and concurrency in
// force under the platform's policy as it is now, so a policy tightened since the application was configured
// holds from this deploy on. The one path of a deploy after a build, POST deploy and PATCH.
import type { StoredApplication } from '../store/applications.js'
import { markDeployed } from '../store/builds.js'
import type { DomainDeps } from './deps.js'
import { concurrencyInForce, resourcesInForce } from './policy.js'

export async function deployApplication(
  { db, config, runtime, notApplied }: Pick<DomainDeps, 'db' | 'config' | 'runtime' | 'notApplied'>,
  application: StoredApplication,
  image: string,
): Promise<void> {
  await runtime.deploy(
    {
      ...application,
      resources: resourcesInForce(config, application.settings.resources),
      concurrency: concurrencyInForce(config, application.settings.concurrency),
    },
    image,
  )
  notApplied.delete(application.id)
  // Which build runs, when the runtime runs it re-locked under another digest.
  await markDeployed(db, application.id, image)
}
