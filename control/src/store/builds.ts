// Builds of an application in the database, newest first, and their transitions. The cluster
// side (the Job that runs a build) is in cluster/build-jobs.ts and cluster/build-watcher.ts; a build's status
// only moves forward here (pending → running → succeeded | failed), so late or repeated
// events from the cluster cannot undo an end.
import { randomUUID } from 'node:crypto'
import type { BuildT } from '../model/resources.js'
import type { Database } from './db.js'
import { iso, isUuid } from './db.js'

type BuildRow = {
  id: string
  status: BuildT['status']
  image_ref: string | null
  image_size_bytes: string | number | null
  error: string | null
  created_at: Date
  finished_at: Date | null
}

const COLUMNS = 'id, status, image_ref, image_size_bytes, error, created_at, finished_at'

function toBuild(row: BuildRow): BuildT {
  return {
    id: row.id,
    status: row.status,
    imageRef: row.image_ref,
    // bigint comes back as text from pg.
    imageSizeBytes: row.image_size_bytes === null ? null : Number(row.image_size_bytes),
    createdAt: iso(row.created_at),
    finishedAt: row.finished_at === null ? null : iso(row.finished_at),
    error: row.error,
  }
}

/** Null when the application does not exist. */
export async function listBuilds(db: Database, appId: string): Promise<BuildT[] | null> {
  if (!isUuid(appId)) return null
  const rows = await db.query<BuildRow & { app: string }>(
    `SELECT a.id AS app, b.id, b.status, b.image_ref, b.image_size_bytes, b.error, b.created_at, b.finished_at
       FROM applications a LEFT JOIN builds b ON b.application_id = a.id
      WHERE a.id = $1 ORDER BY b.created_at DESC, b.id`,
    [appId],
  )
  if (rows.length === 0) return null
  return rows.filter((row) => row.id !== null).map(toBuild)
}

export async function getBuild(db: Database, appId: string, buildId: string): Promise<BuildT | null> {
  if (!isUuid(appId) || !isUuid(buildId)) return null
  const [row] = await db.query<BuildRow>(`SELECT ${COLUMNS} FROM builds WHERE id = $1 AND application_id = $2`, [
    buildId,
    appId,
  ])
  return row === undefined ? null : toBuild(row)
}

/** A new pending build; null when the application does not exist. */
export async function createBuild(db: Database, appId: string, id: string = randomUUID()): Promise<BuildT | null> {
  if (!isUuid(appId)) return null
  const [row] = await db.query<BuildRow>(
    `INSERT INTO builds (id, application_id, status) SELECT $1, id, 'pending' FROM applications WHERE id = $2 RETURNING ${COLUMNS}`,
    [id, appId],
  )
  return row === undefined ? null : toBuild(row)
}

/** Builds of the tenant's applications not yet finished (pending or running). */
export async function activeTenantBuilds(db: Database, tenant: string): Promise<number> {
  const [row] = await db.query<{ count: string | number }>(
    "SELECT count(*) AS count FROM builds b JOIN applications a ON a.id = b.application_id WHERE a.tenant = $1 AND b.status IN ('pending', 'running')",
    [tenant],
  )
  return Number(row?.count ?? 0)
}

/**
 * How long a build may wait for its Job to be created before it counts as lost: only a process
 * that died between inserting the build and creating its Job leaves one waiting longer. Far
 * above the few seconds a create takes, measured by the database's clock from the build's
 * creation, so every replica reads the same answer.
 */
export const JOB_CREATION_GRACE_SECONDS = 300

type UnfinishedBuild = {
  id: string
  appId: string
  status: BuildT['status']
  /** Its Job was created, or it has waited for that longer than the grace: a missing Job means lost. */
  expectsJob: boolean
}

/** Builds not yet succeeded or failed, oldest first: the ones the watcher must follow. */
export async function unfinishedBuilds(db: Database): Promise<UnfinishedBuild[]> {
  const rows = await db.query<{ id: string; application_id: string; status: BuildT['status']; expects_job: boolean }>(
    `SELECT id, application_id, status, (job_created OR created_at < now() - make_interval(secs => $1)) AS expects_job
       FROM builds WHERE status IN ('pending', 'running') ORDER BY created_at`,
    [JOB_CREATION_GRACE_SECONDS],
  )
  return rows.map((row) => ({ id: row.id, appId: row.application_id, status: row.status, expectsJob: row.expects_job }))
}

/** Record that the build's Job exists: from now on, a Job missing from the cluster means the build is lost. */
export async function markJobCreated(db: Database, buildId: string): Promise<void> {
  await db.query('UPDATE builds SET job_created = true WHERE id = $1', [buildId])
}

/** pending → running; false when the build is gone or already further. */
export async function markRunning(db: Database, buildId: string): Promise<boolean> {
  const rows = await db.query(
    "UPDATE builds SET status = 'running' WHERE id = $1 AND status = 'pending' RETURNING id",
    [buildId],
  )
  return rows.length > 0
}

export type BuildOutcome =
  | { status: 'succeeded'; imageRef: string; log: string | null }
  | { status: 'failed'; error: string; log: string | null }

/**
 * Record how a build ended, once: null when it had already ended (another event, another
 * replica) or is gone, so whoever gets the build back does what follows a build's end.
 */
export async function finishBuild(
  db: Database,
  buildId: string,
  outcome: BuildOutcome,
): Promise<(BuildT & { appId: string; tenant: string }) | null> {
  const [row] = await db.query<BuildRow & { application_id: string; tenant: string }>(
    `UPDATE builds SET status = $2, image_ref = $3, error = $4, log = $5, finished_at = now()
      WHERE id = $1 AND status IN ('pending', 'running')
      RETURNING ${COLUMNS}, application_id, (SELECT tenant FROM applications WHERE applications.id = builds.application_id) AS tenant`,
    [
      buildId,
      outcome.status,
      outcome.status === 'succeeded' ? outcome.imageRef : null,
      outcome.status === 'failed' ? outcome.error : null,
      outcome.log,
    ],
  )
  return row === undefined ? null : { ...toBuild(row), appId: row.application_id, tenant: row.tenant }
}

/** The size of a succeeded build's image, learnt after it finished. */
export async function recordImageSize(db: Database, buildId: string, bytes: number): Promise<void> {
  await db.query('UPDATE builds SET image_size_bytes = $2 WHERE id = $1', [buildId, bytes])
}

/** The log kept when the build finished; undefined while it runs or when it was not kept. */
export async function storedBuildLog(db: Database, buildId: string): Promise<string | undefined> {
  const [row] = await db.query<{ log: string | null }>('SELECT log FROM builds WHERE id = $1', [buildId])
  return row?.log ?? undefined
}

/** The image of the application's newest successful build, or null. */
export async function latestImage(db: Database, appId: string): Promise<string | null> {
  if (!isUuid(appId)) return null
  const [row] = await db.query<{ image_ref: string }>(
    "SELECT image_ref FROM builds WHERE application_id = $1 AND status = 'succeeded' ORDER BY finished_at DESC, created_at DESC LIMIT 1",
    [appId],
  )
  return row?.image_ref ?? null
}

/** Remove a build whose Job could not be created: the caller got an error, not a build. */
export async function deleteBuild(db: Database, buildId: string): Promise<void> {
  await db.query('DELETE FROM builds WHERE id = $1', [buildId])
}

/** The application's succeeded builds of `image` were deployed now (a runtime applied it). */
export async function markDeployed(db: Database, appId: string, image: string): Promise<void> {
  if (!isUuid(appId)) return
  await db.query(
    "UPDATE builds SET deployed_at = now() WHERE application_id = $1 AND image_ref = $2 AND status = 'succeeded'",
    [appId, image],
  )
}

/** The build deployed last, or null when none was recorded as deployed. */
export async function lastDeployedBuild(db: Database, appId: string): Promise<string | null> {
  if (!isUuid(appId)) return null
  const [row] = await db.query<{ id: string }>(
    'SELECT id FROM builds WHERE application_id = $1 AND deployed_at IS NOT NULL ORDER BY deployed_at DESC, finished_at DESC LIMIT 1',
    [appId],
  )
  return row?.id ?? null
}

/** True when the application has had any build (so the cluster may hold something of it). */
export async function hasBuilds(db: Database, appId: string): Promise<boolean> {
  if (!isUuid(appId)) return false
  return (await db.query('SELECT 1 FROM builds WHERE application_id = $1 LIMIT 1', [appId])).length > 0
}

/** A build's status, or null when there is no such build. */
export async function buildStatus(db: Database, buildId: string): Promise<BuildT['status'] | null> {
  if (!isUuid(buildId)) return null
  const [row] = await db.query<{ status: BuildT['status'] }>('SELECT status FROM builds WHERE id = $1', [buildId])
  return row?.status ?? null
}
