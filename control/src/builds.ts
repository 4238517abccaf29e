// Builds of an application in the database, newest first. The cluster side (the Job that runs
// a build and the status it reports) arrives with the cluster client; this module only stores.
import { randomUUID } from 'node:crypto'
import type { Database } from './db.js'
import { iso, isUuid } from './db.js'
import type { BuildT } from './schemas.js'

type BuildRow = { id: string; status: BuildT['status']; image_ref: string | null; error: string | null; created_at: Date; finished_at: Date | null }

const COLUMNS = 'id, status, image_ref, error, created_at, finished_at'

function toBuild (row: BuildRow): BuildT {
  return {
    id: row.id,
    status: row.status,
    imageRef: row.image_ref,
    createdAt: iso(row.created_at),
    finishedAt: row.finished_at === null ? null : iso(row.finished_at),
    error: row.error,
  }
}

/** Null when the application does not exist. */
export async function listBuilds (db: Database, appId: string): Promise<BuildT[] | null> {
  if (!isUuid(appId)) return null
  const rows = await db.query<BuildRow & { app: string }>(
    `SELECT a.id AS app, b.id, b.status, b.image_ref, b.error, b.created_at, b.finished_at
       FROM applications a LEFT JOIN builds b ON b.application_id = a.id
      WHERE a.id = $1 ORDER BY b.created_at DESC, b.id`, [appId])
  if (rows.length === 0) return null
  return rows.filter((row) => row.id !== null).map(toBuild)
}

export async function getBuild (db: Database, appId: string, buildId: string): Promise<BuildT | null> {
  if (!isUuid(appId) || !isUuid(buildId)) return null
  const [row] = await db.query<BuildRow>(`SELECT ${COLUMNS} FROM builds WHERE id = $1 AND application_id = $2`, [buildId, appId])
  return row === undefined ? null : toBuild(row)
}

/** A new pending build; null when the application does not exist. */
export async function createBuild (db: Database, appId: string): Promise<BuildT | null> {
  if (!isUuid(appId)) return null
  const [row] = await db.query<BuildRow>(
    `INSERT INTO builds (id, application_id, status) SELECT $1, id, 'pending' FROM applications WHERE id = $2 RETURNING ${COLUMNS}`,
    [randomUUID(), appId])
  return row === undefined ? null : toBuild(row)
}
