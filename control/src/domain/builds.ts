// Builds as the API offers them: starting one (the sources packed with a generated spin.toml,
// a pending row, then the runtime's start) and finding its log, from the database once it has
// finished, else from the runtime while it runs.
import { randomUUID } from 'node:crypto'
import { spinManifest } from '@session-relay/spin/manifest'
import { TooManyRequestsError } from '@session-relay/common/errors'
import type { BuildT } from '../model/resources.js'
import type { BuildApplication, BuildLog } from '../runtime/runtime.js'
import { packArchive } from '@session-relay/spin/source/archive'
import { activeTenantBuilds, createBuild, deleteBuild, getBuild, storedBuildLog } from '../store/builds.js'
import type { Database } from '../store/db.js'
import { functionSources } from '../store/sources.js'
import type { DomainDeps } from './deps.js'
import { applicationNotFound, buildNotFound } from './not-found.js'

/** spin.toml and every function's files under functions/{name}/, as one .tar.gz. */
async function buildArchive(
  db: Database,
  app: { id: string; name: string; language: BuildApplication['language'] },
): Promise<Buffer> {
  const functions = await functionSources(db, app.id)
  const files: Record<string, string> = { 'spin.toml': spinManifest(app, functions) }
  for (const fn of functions) {
    for (const [path, content] of Object.entries(fn.files)) files[`functions/${fn.name}/${path}`] = content
  }
  return packArchive(files, new Date(0))
}

/** A pending build of the application's current source, started by the runtime; refused with the reason otherwise. */
export async function startBuild({ db, config, runtime }: DomainDeps, application: BuildApplication): Promise<BuildT> {
  await refusePastTenantShare(db, config, application.tenant)
  const archive = await buildArchive(db, application)
  await runtime.checkBuild(application.language, archive.length)
  const id = randomUUID()
  const build = await createBuild(db, application.id, id)
  if (build === null) throw applicationNotFound()
  try {
    await runtime.startBuild(application, id, archive)
  } catch (error) {
    // The caller gets the reason, not a build that can never run.
    await deleteBuild(db, id)
    throw error
  }
  return build
}

// About what one build takes here (docs/testing.md): when a slot is likely to have freed.
const BUILD_RETRY_AFTER_SECONDS = 30

/**
 * One tenant may hold only so many builds running and queued, so its many cannot starve
 * another's (checked before the row is written; two requests at the same instant may both pass).
 */
async function refusePastTenantShare(db: Database, config: DomainDeps['config'], tenant: string): Promise<void> {
  const active = await activeTenantBuilds(db, tenant)
  if (active >= config.maxTenantBuilds) {
    throw new TooManyRequestsError(
      `this tenant has ${active} builds running or queued, at most ${config.maxTenantBuilds} (PLATFORM_MAX_TENANT_BUILDS): start this one when one has finished`,
      BUILD_RETRY_AFTER_SECONDS,
    )
  }
}

export async function findBuildLog(
  { db, runtime }: Pick<DomainDeps, 'db' | 'runtime'>,
  appId: string,
  buildId: string,
  options: { follow: boolean; signal: AbortSignal },
): Promise<BuildLog> {
  const build = await getBuild(db, appId, buildId)
  if (build === null) throw buildNotFound()
  const finished = build.status === 'succeeded' || build.status === 'failed'
  if (finished) {
    const stored = await storedBuildLog(db, buildId)
    if (stored !== undefined) return { kind: 'text', text: stored }
  }
  return runtime.buildLog(buildId, finished, options)
}
