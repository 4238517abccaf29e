// Builds as the API offers them: starting one (the sources packed with a generated spin.toml,
// a pending row, then the Job) and finding its log, from the database once it has finished,
// else from its pod while it runs.
import { randomUUID } from 'node:crypto'
import type { Readable } from 'node:stream'
import type { BuildApplication } from '../cluster/build-jobs.js'
import { BUILD_LABEL, createBuildJob, MAX_BUILD_ARCHIVE_BYTES, spinManifest } from '../cluster/build-jobs.js'
import { MAX_STORED_LOG_BYTES } from '../cluster/build-watcher.js'
import type { Cluster } from '../cluster/cluster.js'
import { clusterNotConfigured } from '../cluster/kube.js'
import { containerState, listPods, openPodLog, readPodLog } from '../cluster/pod-logs.js'
import type { ControlConfig } from '../config.js'
import { NotFoundError, TooLargeError, TooManyRequestsError, UnavailableError } from '../errors.js'
import type { BuildT, LanguageT } from '../model/resources.js'
import { packArchive } from '../source/archive.js'
import { activeTenantBuilds, createBuild, deleteBuild, getBuild, markJobCreated, storedBuildLog } from '../store/builds.js'
import type { Database } from '../store/db.js'
import { functionSources } from '../store/sources.js'
import type { LocalRuntime } from '../local/local.js'
import { applicationNotFound, buildNotFound } from './not-found.js'

export type BuildDeps = { db: Database; config: ControlConfig; cluster: Cluster | null; local?: LocalRuntime | null | undefined }

/** Why this configuration cannot build `language`, or null. */
function cannotBuild (config: ControlConfig, language: LanguageT): UnavailableError | null {
  if (config.builderImages[language] === '') return new UnavailableError(`no builder image for ${language}: set PLATFORM_BUILDER_IMAGES`)
  if (config.imageRepository === '') return new UnavailableError('no image repository for builds: set PLATFORM_IMAGE_REPOSITORY')
  return null
}

/** spin.toml and every function's files under functions/{name}/, as one .tar.gz. */
async function buildArchive (db: Database, app: BuildApplication): Promise<Buffer> {
  const functions = await functionSources(db, app.id)
  const files: Record<string, string> = { 'spin.toml': spinManifest(app, functions) }
  for (const fn of functions) {
    for (const [path, content] of Object.entries(fn.files)) files[`functions/${fn.name}/${path}`] = content
  }
  return packArchive(files, new Date(0))
}

/** A pending build of the application's current source, its Job created or its local run queued; refused with the reason otherwise. */
export async function startBuild ({ db, config, cluster, local }: BuildDeps, application: BuildApplication & { tenant: string }): Promise<BuildT> {
  await refusePastTenantShare(db, config, application.tenant)
  if (cluster !== null) return startClusterBuild({ db, config, cluster }, application)
  if (local == null) throw clusterNotConfigured()
  const missing = await local.cannotBuild(application.language)
  if (missing !== null) throw new UnavailableError(missing)
  // Refused now, naming what to build, rather than a build that can only fail.
  local.builder()
  const archive = await buildArchive(db, application)
  const id = randomUUID()
  const build = await createBuild(db, application.id, id)
  if (build === null) throw applicationNotFound()
  local.builds.start(application, id, local.imageRefFor(application, id), archive)
  return build
}

// About what one build takes here (docs/testing.md): when a slot is likely to have freed.
const BUILD_RETRY_AFTER_SECONDS = 30

/**
 * One tenant may hold only so many builds running and queued, so its many cannot starve
 * another's (checked before the row is written; two requests at the same instant may both pass).
 */
async function refusePastTenantShare (db: Database, config: ControlConfig, tenant: string): Promise<void> {
  const active = await activeTenantBuilds(db, tenant)
  if (active >= config.maxTenantBuilds) {
    throw new TooManyRequestsError(`this tenant has ${active} builds running or queued, at most ${config.maxTenantBuilds} (PLATFORM_MAX_TENANT_BUILDS): start this one when one has finished`, BUILD_RETRY_AFTER_SECONDS)
  }
}

async function startClusterBuild ({ db, config, cluster }: { db: Database; config: ControlConfig; cluster: Cluster }, application: BuildApplication): Promise<BuildT> {
  const refusal = cannotBuild(config, application.language)
  if (refusal !== null) throw refusal
  const archive = await buildArchive(db, application)
  if (archive.length > MAX_BUILD_ARCHIVE_BYTES) {
    throw new TooLargeError(`source too large to build: the gzipped sources take ${archive.length} bytes, at most ${MAX_BUILD_ARCHIVE_BYTES} fit in a Secret`)
  }
  // The row says its Job is not created yet, so no replica's resync takes it for lost until
  // markJobCreated (or the grace in store/builds.ts, should this process die in between).
  const id = randomUUID()
  const build = await createBuild(db, application.id, id)
  if (build === null) throw applicationNotFound()
  try {
    await createBuildJob(cluster.kube, config, application, id, archive)
  } catch (error) {
    // The caller gets the reason, not a build that can never run.
    await deleteBuild(db, id)
    throw error
  }
  await markJobCreated(db, id)
  return build
}

/** Where a build's log is now: all of it as text, a stream from its running pod, or not yet anywhere. */
export type BuildLog = { kind: 'text'; text: string } | { kind: 'stream'; upstream: Readable } | { kind: 'not-started' }

export async function findBuildLog (
  { db, cluster, local }: { db: Database; cluster: Cluster | null; local?: LocalRuntime | null | undefined },
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
  if (cluster === null && local != null) {
    const live = local.builds.log(buildId, options)
    if (live !== null) return { kind: 'stream', upstream: live }
    // It ended between the two reads: its log is in the database now.
    const stored = await storedBuildLog(db, buildId)
    if (stored !== undefined) return { kind: 'text', text: stored }
    throw new NotFoundError(finished ? 'no log was kept: the build ended before its builder ran' : 'no log: this build is not running on this machine')
  }
  if (cluster === null) throw finished ? logGone() : clusterNotConfigured()
  const [pod] = await listPods(cluster.kube, `${BUILD_LABEL}=${buildId}`)
  if (pod === undefined && finished) throw logGone()
  if (pod !== undefined && containerState(pod) === 'terminated') return { kind: 'text', text: await readPodLog(cluster.kube, pod, MAX_STORED_LOG_BYTES) }
  if (pod !== undefined && containerState(pod) === 'running') return { kind: 'stream', upstream: await openPodLog(cluster.kube, pod, options) }
  return { kind: 'not-started' }
}

function logGone (): NotFoundError {
  return new NotFoundError("the build's log is gone: its pod was removed before the log could be saved")
}
