// What runs, as the runtime routes ask for it: re-deploying the newest image, one request to a
// deployed function, and the application's own log.
import type { Readable } from 'node:stream'
import { ConflictError } from '@session-relay/common/errors'
import type { InvokeRequestT, InvokeResultT } from '../model/resources.js'
import { findApplication, findApplicationWithRoute } from '../store/applications.js'
import { latestImage } from '../store/builds.js'
import { bumpGeneration } from '../store/deployments.js'
import { REPORTED_WAIT_MS } from './reconcile.js'
import type { DomainDeps } from './deps.js'
import { prepareInvoke } from './invoke.js'
import { applicationNotFound, functionNotFound } from './not-found.js'
import { carryTraceContext, inSpan } from '../tracing/spans.js'

/** Apply the newest successful build and the settings again (a new generation); that image. */
export async function redeploy(deps: DomainDeps, appId: string): Promise<{ appId: string; image: string }> {
  const application = await findApplication(deps.db, appId)
  if (application === null) throw applicationNotFound()
  deps.runtime.checkDeploy()
  const image = await latestImage(deps.db, application.id)
  if (image === null) throw new ConflictError('nothing to deploy: the application has no successful build yet')
  // A new generation: applied even when nothing changed, which is what the caller asks for.
  await bumpGeneration(deps.db, application.id)
  const reconciled = await deps.deployments.reconcile(application.id, { waitMs: REPORTED_WAIT_MS })
  if (reconciled.kind === 'failed') throw reconciled.error
  return { appId: application.id, image }
}

/** The request checked against the function's route, then sent to the application. */
export async function invokeFunction(
  { db, runtime }: DomainDeps,
  appId: string,
  fnId: string,
  request: InvokeRequestT,
): Promise<InvokeResultT> {
  // One read: a function belongs to its application, so both exist or the function does not.
  const found = await findApplicationWithRoute(db, appId, fnId)
  if (found === null) throw functionNotFound()
  const prepared = prepareInvoke(request, found.route)
  // Around the call to the worker: its HTTP client span (and the worker's own) are children,
  // so the trace context the worker gets continues this one.
  return inSpan(
    'invoke',
    { 'platform.application.id': found.application.id, 'platform.function.id': fnId },
    async (span) => {
      carryTraceContext(prepared.headers)
      const result = await runtime.invoke(found.application, prepared)
      span.setAttribute('http.response.status_code', result.status)
      return result
    },
  )
}

/** The application's own output: its newest running pod's log in a cluster, its output on this machine. */
export async function openApplicationLog(
  { db, runtime }: DomainDeps,
  appId: string,
  options: { follow: boolean; tailLines: number | undefined; signal: AbortSignal },
): Promise<Readable> {
  const application = await findApplication(db, appId)
  if (application === null) throw applicationNotFound()
  return runtime.openLog(application, options)
}
